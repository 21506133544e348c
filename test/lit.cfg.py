# lit configuration of Loom's FileCheck tests.
import os
import shutil
import subprocess
import lit.formats
from lit.llvm import llvm_config

config.name = "Loom"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.loom_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "unit", "Inputs",
                   "conformance", "models"]
config.substitutions.append(("%models", os.path.join(config.test_source_root, "models")))

# MLIR's JIT runner and its support libraries, for numeric tests.
llvm_lib_dir = os.path.join(os.path.dirname(config.llvm_tools_dir), "lib")
config.substitutions.append(("%mlir_runner_libs", ",".join(
    os.path.join(llvm_lib_dir, lib)
    for lib in ["libmlir_runner_utils.so", "libmlir_c_runner_utils.so"])))

# libloomrt provides the kernels compiled code calls (GEMM).
config.substitutions.append(("%loomrt", os.path.join(config.loom_obj_root, "lib", "libloomrt.so")))

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(["loom-opt", "loomc", "loom-run",
                                    "npy-compare", "gradcheck",
                                    "trajectory-compare", "comm-check"],
                                   [config.loom_tools_dir])
llvm_config.add_tool_substitutions(["mlir-runner"], [config.llvm_tools_dir])

# The CUDA toolkit (ptxas, fatbinary, libdevice), where CMake found it:
# tests that assemble kernels REQUIRE ptxas; loomc finds the toolkit
# through CUDA_HOME.
if config.cuda_home:
    config.available_features.add("ptxas")
    config.environment["CUDA_HOME"] = config.cuda_home
    config.substitutions.append(("%ptxas", os.path.join(config.cuda_home, "bin", "ptxas")))

# Two CPUs at least (CPUs 0 and 1, which the pinning test names).
if {0, 1} <= os.sched_getaffinity(0):
    config.available_features.add("cpus-0-1")

# A CUDA device (the device machine's scripts/gpu-check.sh runs lit too).
if shutil.which("nvidia-smi") and subprocess.run(
        ["nvidia-smi", "-L"], stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL).returncode == 0:
    config.available_features.add("cuda-device")

# TensorBoard's own event reader, for the --tensorboard test: a Python that
# can import it (scripts/install-deps.sh installs it with pip when it can).
import shutil
import subprocess
for candidate in [shutil.which("python3"), getattr(config, "python_executable", None)]:
    if not candidate:
        continue
    probe = subprocess.run(
        [candidate, "-c", "import tensorboard.backend.event_processing.event_accumulator"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if probe.returncode == 0:
        config.available_features.add("tensorboard")
        config.substitutions.append(("%tbpython", candidate))
        break
