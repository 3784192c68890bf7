"""Compiler options of the replay's hot code: the engine, the program it reads and the lowering
that fills it."""

# In -c opt builds only (the benchmarks, the sweep as users run it): -O3, and no frame pointer
# (Bazel's toolchain keeps one). No -march, so no FMA contraction: predictions are the same bit
# for bit (run --json of every example and both example sweeps compared, 2026-11-26). Measured
# in interleaved pairs on the 2-core development machine (2026-11-26): the Llama 3 405B
# replay's engine 1.87-1.89 -> 1.80-1.83 ms and its lowering 0.585 -> 0.545 ms; GPT-3 175B's
# median replay 0.454 -> 0.442 ms. Test and sanitizer builds keep their own flags.
REPLAY_COPTS = select({
    "//sim:opt": ["-O3", "-fomit-frame-pointer"],
    "//conditions:default": [],
})
