import os
import lit.formats

config.name = "linac"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir"]
config.excludes = ["Numerics", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.linac_obj_root, "test")
config.environment["PATH"] = os.pathsep.join(
    [config.linac_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])
config.substitutions.append(("%examples", os.path.join(config.linac_src_root, "examples")))
