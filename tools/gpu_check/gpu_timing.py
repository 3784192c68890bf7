"""CUDA-event timing shared by the gpu_check benchmarks."""
import statistics
import sys

import torch


def require_gpu(tool):
    """False (after saying why) where no CUDA GPU is usable."""
    if torch.cuda.is_available():
        return True
    print(f"{tool}: no CUDA GPU", file=sys.stderr)
    return False


def warm_up():
    """Brings the clocks up from idle: an idle GPU's first milliseconds run far slower."""
    x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    for _ in range(300):
        x @ x
    torch.cuda.synchronize()


def timed(fn, runs, batch=1):
    """Median and spread ((max - min) / median) of `runs` timings of one call of `fn`, seconds.

    With `batch` > 1 each timing is the mean of `batch` calls replayed from one CUDA graph
    between two CUDA events: kernels of tens of microseconds launched from Python one by one
    would time Python's launch instead. Where capture fails the calls are queued directly.
    """
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    call = fn
    if batch > 1:
        try:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for _ in range(batch):
                    fn()
            call = graph.replay
        except Exception as e:  # noqa: BLE001 - fall back to queued launches
            print(f"no CUDA graph ({e}); timing queued launches", file=sys.stderr)
            call = lambda: [fn() for _ in range(batch)]  # noqa: E731
        call()
        torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        call()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e-3 / batch)
    med = statistics.median(times)
    return med, (max(times) - min(times)) / med


def write_measurements(path, how, family, rows):
    """Writes a measurements file (hardware/measurements.h) of one family's `rows` for GPU 0,
    through a temporary file renamed into place (no half-written file)."""
    import datetime
    import os

    with open(path + ".tmp", "w") as f:
        f.write("# parasim measurements (hardware/measurements.h)\n")
        f.write(f"# {how}\n")
        f.write(f'device: "{torch.cuda.get_device_name(0)}"\n')
        f.write(f'date: "{datetime.date.today().isoformat()}"\n')
        f.write(f"{family}:\n" + "\n".join(rows) + "\n")
    os.replace(path + ".tmp", path)


def cuda_kernels(fn):
    """The kernels one call of `fn` runs, as the profiler lists them: their count and their
    durations summed, milliseconds."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return len(kernels), sum(e.time_range.elapsed_us() for e in kernels) / 1e3


def finish(rows, path):
    """Prints the device's line and writes it and `rows` as JSON lines to `path` (when given)
    through a temporary file renamed into place."""
    import json
    import os

    meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__}
    print(json.dumps(meta))
    if not path:
        return
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        for row in [meta, *rows]:
            f.write(json.dumps(row) + "\n")
    os.replace(path + ".tmp", path)
