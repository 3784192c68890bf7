"""Detects a local CUDA toolkit (nvcc, cudart, cuBLAS, NCCL) for the calibration program.

Creates @local_cuda with `defs.bzl` (CUDA_AVAILABLE) and, when the toolkit exists, a `cuda`
cc_library. Without /usr/local/cuda the repository is empty and CUDA targets are skipped, so
`bazel build //...` stays green on machines without a toolkit.
"""

def _cuda_configure_impl(ctx):
    root = ctx.os.environ.get("CUDA_HOME", "/usr/local/cuda")
    nvcc = ctx.path(root + "/bin/nvcc")
    nccl_header = ctx.path(root + "/include/nccl.h")
    available = nvcc.exists and nccl_header.exists
    ctx.file("defs.bzl", "CUDA_AVAILABLE = %s\nCUDA_ROOT = \"%s\"\n" % (available, root))
    if available:
        ctx.symlink(root, "cuda")
        ctx.file("BUILD", """
package(default_visibility = ["//visibility:public"])
cc_library(
    name = "cuda",
    hdrs = glob(["cuda/include/**"], exclude = ["cuda/include/**/*.txt"]),
    includes = ["cuda/include"],
    linkopts = ["-L%s/lib64", "-Wl,-rpath,%s/lib64", "-lcublasLt", "-lcublas", "-lnccl", "-lcudart"],
)
filegroup(name = "nvcc", srcs = ["cuda/bin/nvcc"])
""" % (root, root))
    else:
        ctx.file("BUILD", "package(default_visibility = [\"//visibility:public\"])\n")

cuda_configure = repository_rule(
    implementation = _cuda_configure_impl,
    environ = ["CUDA_HOME"],
    local = True,
)
