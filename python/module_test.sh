#!/usr/bin/env bash
# Runs module_test.py with the Python the headers belong to ($1), the module's folder on
# PYTHONPATH. Under --config=asan the module carries the sanitizer runtime, which must be loaded
# first: preload it (leak checks off, since the interpreter keeps its objects at exit).
set -euo pipefail
python="$1" test_py="$2" module="$3"
export PYTHONPATH="$(dirname "$module")"
if ldd "$module" 2>/dev/null | grep libasan >/dev/null; then
  export LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
  export ASAN_OPTIONS="detect_leaks=0"
fi
exec "$python" "$test_py"
