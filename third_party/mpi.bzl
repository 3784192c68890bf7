"""Finds Debian's Open MPI (libopenmpi-dev, openmpi-bin) for `mpirun -np N parasim sweep`.

Creates @local_mpi with an `mpi` cc_library (mpi.h and -lmpi) and `defs.bzl` with MPI_AVAILABLE
and MPIRUN (the launcher the MPI test runs). tools/bazel installs both packages. Without them the
library is empty, parasim is built without MPI (a sweep launched by mpirun is refused with a
message), and the MPI test fails saying so.
"""

_INCLUDE = "/usr/lib/x86_64-linux-gnu/openmpi/include"
_LIB = "/usr/lib/x86_64-linux-gnu/openmpi/lib"

def _mpi_configure_impl(ctx):
    include = ctx.os.environ.get("PARASIM_MPI_INCLUDE", _INCLUDE)
    lib = ctx.os.environ.get("PARASIM_MPI_LIB", _LIB)
    mpirun = ctx.which("mpirun")
    available = ctx.path(include + "/mpi.h").exists and ctx.path(lib + "/libmpi.so").exists
    ctx.file("defs.bzl", "MPI_AVAILABLE = %s\nMPIRUN = \"%s\"\n" % (
        available,
        str(mpirun) if mpirun else "",
    ))
    if available:
        ctx.symlink(include, "include")
        ctx.file("BUILD", """
package(default_visibility = ["//visibility:public"])
cc_library(
    name = "mpi",
    hdrs = glob(["include/**/*.h"]),
    includes = ["include"],
    # The C API only: without OMPI_SKIP_MPICXX, mpi.h pulls in the deprecated C++ bindings.
    defines = ["PARASIM_HAVE_MPI", "OMPI_SKIP_MPICXX=1"],
    linkopts = ["-L%s", "-Wl,-rpath,%s", "-lmpi"],
)
""" % (lib, lib))
    else:
        ctx.file("BUILD", """
package(default_visibility = ["//visibility:public"])
cc_library(name = "mpi")
""")

mpi_configure = repository_rule(
    implementation = _mpi_configure_impl,
    environ = ["PARASIM_MPI_INCLUDE", "PARASIM_MPI_LIB", "PATH"],
    local = True,
)
