"""Framework settings that every experiment shares, applied by use_shared_settings().

Both frameworks get float32 matmuls at full precision (JAX on GPU defaults to a faster,
lower precision than torch), and JAX gets float64 so the dtype sweeps can reach it. The runner
(study.runs.runner) and the test suite call use_shared_settings() before any case runs; code
that imports the library on its own calls it too. A check of one framework's rule names that
framework alone, so that the other is never imported; reading results imports neither.

JAX compiles every op it runs eagerly, about 70 ms each on a small CPU, and the atlas alone
compiles some 1,100, most of them again in each process and run. So JAX's persistent
compilation cache is on (JAX_CACHE_DIR, shared by every run and checkout of this user, as
torch's inductor cache is), except where compile time is itself measured: the timing
experiment turns it off. A cached executable is the one XLA compiled for the same program,
options and release, so no measured value depends on it.

Torch's inductor keeps compiled graphs and their kernels in a folder on disk too, so a first call
reads them back there instead of compiling, at a fraction of the time. Where compile time is
measured, inductor compiles into an empty folder of the run's own (removed at exit), as a first
run in a new environment does, and the processes the run starts share it; everywhere else it uses
the user's folder.
"""
import atexit
import os
import shutil
import tempfile

FRAMEWORKS = ("torch", "jax")
MATMUL_PRECISION = "highest"
JAX_CACHE_DIR = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                             "relu-gradient-study", "jax")


def use_shared_settings(frameworks: tuple[str, ...] = FRAMEWORKS,
                        compile_cache: bool = True) -> None:
    """`compile_cache`: JAX's persistent compilation cache on (a directory the user set with
    JAX_COMPILATION_CACHE_DIR, else JAX_CACHE_DIR) or, where compile time is measured, off."""
    if "jax" in frameworks:
        import jax
        jax.config.update("jax_enable_x64", True)
        jax.config.update("jax_default_matmul_precision", MATMUL_PRECISION)
        _use_jax_compile_cache(jax, compile_cache)
    if "torch" in frameworks:
        import torch
        torch.set_float32_matmul_precision(MATMUL_PRECISION)
        _use_inductor_folder(compile_cache)


def _use_jax_compile_cache(jax, on: bool) -> None:
    from jax.experimental.compilation_cache import compilation_cache
    directory = os.environ.get("JAX_COMPILATION_CACHE_DIR") or JAX_CACHE_DIR
    try:  # every program, however quick to compile or small: most of the atlas's are both
        # and no size limit: with one, JAX locks the folder and reads every entry's access
        # time at each write (about 5 kB an entry; a suite run writes some 2,000)
        for option, value in (("jax_persistent_cache_min_compile_time_secs", 0),
                              ("jax_persistent_cache_min_entry_size_bytes", -1)):
            jax.config.update(option, value)
    except AttributeError:  # a release without these options (the history's oldest) runs
        on = False          # without the cache: slower, the same values
    jax.config.update("jax_compilation_cache_dir", directory if on else None)
    compilation_cache.reset_cache()  # JAX decides whether to use its cache once, until reset


INDUCTOR_DIR_ENV = "TORCHINDUCTOR_CACHE_DIR"
RUN_FOLDER_ENV = "RELU_STUDY_EMPTY_INDUCTOR_DIR"  # the timed run's folder, for its processes
_inductor = {"switched": False, "user": None, "empty": None, "owned": False}


def _use_inductor_folder(cache: bool) -> None:
    """Without `cache`, a new empty folder for inductor (the last one removed), which the
    processes the run starts share (they inherit it); with it, the folder the process started
    with, where an empty one had replaced it. Inductor reads its folder from the environment at
    each use; what it holds in memory is dropped at a switch."""
    if cache and not _inductor["switched"]:
        return
    run_folder = os.environ.get(RUN_FOLDER_ENV)
    if (not cache and not _inductor["switched"] and run_folder
            and run_folder == os.environ.get(INDUCTOR_DIR_ENV) and os.path.isdir(run_folder)):
        _inductor.update(switched=True, empty=run_folder, owned=False)  # a process of the run
        return
    if not _inductor["switched"]:
        _inductor.update(switched=True, user=os.environ.get(INDUCTOR_DIR_ENV))
    if _inductor["owned"]:
        shutil.rmtree(_inductor["empty"], ignore_errors=True)
    _inductor.update(empty=None, owned=False)
    if cache:
        _inductor["switched"] = False
        os.environ.pop(RUN_FOLDER_ENV, None)
        if _inductor["user"] is None:
            os.environ.pop(INDUCTOR_DIR_ENV, None)
        else:
            os.environ[INDUCTOR_DIR_ENV] = _inductor["user"]
    else:
        folder = tempfile.mkdtemp(prefix="relu-study-inductor-")
        atexit.register(shutil.rmtree, folder, True)
        _inductor.update(empty=folder, owned=True)
        os.environ[INDUCTOR_DIR_ENV] = os.environ[RUN_FOLDER_ENV] = folder
    try:
        from torch._inductor.utils import clear_caches
    except ImportError:  # a release without it: the folder alone is switched
        return
    clear_caches()


def torch_compile_cache() -> str:
    """"empty": inductor compiles into an empty folder of this run's own (see above);
    "user": into the folder it keeps across runs."""
    return "empty" if _inductor["empty"] else "user"


def matmul_settings() -> dict:
    import jax
    import torch
    return {
        "torch_float32_matmul_precision": torch.get_float32_matmul_precision(),
        "torch_cuda_allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
        "jax_default_matmul_precision": str(jax.config.jax_default_matmul_precision),
        "jax_enable_x64": bool(jax.config.jax_enable_x64),
    }
