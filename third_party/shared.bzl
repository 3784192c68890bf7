"""Exposes the project's shared validation files (../shared/validation beside the checkout),
when present, as @shared_validation//:files.

The repository keeps copies under tests/validation/ (a user's clone has no ../shared); a test
checks that each copy is identical to the shared file whenever the shared folder exists.
"""

def _shared_validation_impl(ctx):
    workspace = ctx.path(Label("//:WORKSPACE")).dirname
    shared = workspace.dirname.get_child("shared").get_child("validation")
    names = []
    if shared.exists:
        # The folder and its subfolders (regimes/): every .yaml, by its path under the folder.
        found = ctx.execute(["find", str(shared), "-name", "*.yaml", "-type", "f"])
        for line in sorted(found.stdout.splitlines()):
            name = line[len(str(shared)) + 1:]
            ctx.symlink(line, name)
            names.append(name)
    ctx.file("BUILD", """
package(default_visibility = ["//visibility:public"])
filegroup(name = "files", srcs = %s)
""" % repr(sorted(names)))

shared_validation = repository_rule(
    implementation = _shared_validation_impl,
    local = True,
)
