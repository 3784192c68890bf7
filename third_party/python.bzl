"""Finds the Debian Python 3 headers (python3-dev) for the pybind11 module in //python.

Creates @local_python with a `headers` cc_library (Python.h; pybind11's headers come from
/usr/include, python3-pybind11) and `defs.bzl` with PYTHON (the interpreter the headers belong
to, which the module's test runs). tools/bazel installs python3-dev and python3-pybind11.
Without them the repository is empty and PYTHON_AVAILABLE is False, so //python is skipped.
"""

def _python_configure_impl(ctx):
    python = ctx.os.environ.get("PARASIM_PYTHON", "/usr/bin/python3")
    include = ""
    if ctx.path(python).exists:
        r = ctx.execute([python, "-c", "import sysconfig; print(sysconfig.get_paths()['include'])"])
        if r.return_code == 0:
            include = r.stdout.strip()
    available = include != "" and ctx.path(include + "/Python.h").exists and \
                ctx.path("/usr/include/pybind11/pybind11.h").exists
    ctx.file("defs.bzl", "PYTHON_AVAILABLE = %s\nPYTHON = \"%s\"\n" % (available, python))
    if available:
        ctx.symlink(include, "include")
        ctx.file("BUILD", """
package(default_visibility = ["//visibility:public"])
cc_library(
    name = "headers",
    hdrs = glob(["include/**/*.h"]),
    includes = ["include"],
)
""")
    else:
        ctx.file("BUILD", "package(default_visibility = [\"//visibility:public\"])\n")

python_configure = repository_rule(
    implementation = _python_configure_impl,
    environ = ["PARASIM_PYTHON"],
    local = True,
)
