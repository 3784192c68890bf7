#!/usr/bin/env bash
# Runs module_test.py with the Python the headers belong to ($1), the module's folder on
# PYTHONPATH. Under --config=asan the module needs the sanitizer runtime, which must be loaded
# first: preload it (leak checks off, since the interpreter keeps its objects at exit). gcc's
# build links the module to libasan; clang's (.bazelrc's since 2026-12-01) leaves its runtime's
# symbols undefined, for clang's shared runtime, which holds UBSan's handlers too.
set -euo pipefail
python="$1" test_py="$2" module="$3"
export PYTHONPATH="$(dirname "$module")"
if ldd "$module" 2>/dev/null | grep libasan >/dev/null; then
  export LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
  export ASAN_OPTIONS="detect_leaks=0"
elif nm -D "$module" 2>/dev/null | grep -q ' U __asan_init'; then
  export LD_PRELOAD="$(clang -print-file-name=libclang_rt.asan-x86_64.so)"
  export ASAN_OPTIONS="detect_leaks=0"
fi
exec "$python" "$test_py"
