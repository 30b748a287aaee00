"""Repository layouts whose models read inputs a guess from the factory's directory would miss.

Each layout is a repository (files by path), the config that names its model, what its export reads
(each a mutation that must make it export again) and what it does not read (edits that must leave
it reused). The mutation suite (tests/reuse/mutations.py) and the record's unit tests build them.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from tests.act.harness import write_files as write

RUNTIME = "1.32.0"
SMALL = f"""\
export: {{opsets: [17], exporters: [torchscript]}}
verify: {{random_inputs: 2, batch_sizes: [1, 2]}}
targets: {{runtimes: ["{RUNTIME}"], providers: [cpu]}}
"""
LINEAR = """\
version: 1
model:
  factory: {factory}
  inputs: {{x: {{shape: [batch, 4]}}}}
  outputs: [y]
  dynamic_axes: {{x: {{0: batch}}, y: {{0: batch}}}}
"""
BLOCK = """\
import torch


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, x):
        return torch.relu(self.fc(x))
"""
SUBDIR_FACTORY = """\
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from mylib.layers import Block  # noqa: E402


def build():
    return Block()
"""
INI_FACTORY = """\
import configparser
from pathlib import Path

import torch


def build():
    ini = configparser.ConfigParser()
    ini.read(Path(__file__).with_name("behaviour.ini"))
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    with torch.no_grad():
        model.weight.mul_(float(ini["model"]["scale"]))
    return model
"""
DIST_FACTORY = """\
import fakedep
import torch


def build():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    with torch.no_grad():
        model.weight.mul_(fakedep.SCALE)
    return model
"""
UNREAD = {
    "README.md": "# a repository\n",
    "tests/test_model.py": "def test_nothing():\n    pass\n",
    "docs/notes.md": "notes\n",
    "other/model.py": "import torch\n\n\ndef build():\n    return torch.nn.Linear(4, 4)\n",
    "other/weights.pt": b"\x00other weights",
}
"""Files of every layout that no export reads: another model's directory, docs, tests."""
BUMP = "bump"
"""A mutation that installs another version of a distribution rather than editing a file."""


@dataclasses.dataclass(frozen=True)
class Layout:
    name: str
    files: dict[str, str | bytes | Path]
    config: str = "onnx-gate.yml"
    read: tuple[str, ...] = ()
    """Files the export reads (a path), or BUMP: each must make the model export again."""
    unread: tuple[str, ...] = tuple(UNREAD)
    """Files no export reads: an edit to one must leave every model reused."""
    pythonpath: tuple[str, ...] = ()
    """Directories of the repository the export imports from (PYTHONPATH)."""
    owner: dict[str, str] = dataclasses.field(default_factory=dict)
    """In a repository of several models: a read file → the model that reads it (the others must
    be reused when it changes)."""


def linear_config(factory: str) -> str:
    return LINEAR.format(factory=factory) + SMALL


def subdir_package() -> Layout:
    """The factory in export/ imports its layers from src/mylib, elsewhere in the repository."""
    files: dict[str, str | bytes | Path] = {
        "onnx-gate.yml": linear_config("export/model.py:build"),
        "export/model.py": SUBDIR_FACTORY,
        "src/mylib/__init__.py": "",
        "src/mylib/layers.py": BLOCK,
        "src/mylib/unused.py": "NOT_IMPORTED = 1\n",
        **UNREAD,
    }
    read = ("export/model.py", "src/mylib/__init__.py", "src/mylib/layers.py")
    return Layout("subdir-package", files, read=read, unread=(*UNREAD, "src/mylib/unused.py"))


def settings_file() -> Layout:
    """The factory reads a setting from behaviour.ini (a suffix no list would hold)."""
    files: dict[str, str | bytes | Path] = {
        "onnx-gate.yml": linear_config("model.py:build"),
        "model.py": INI_FACTORY,
        "behaviour.ini": "[model]\nscale = 1.0\n",
        "behaviour.bak": "[model]\nscale = 9.0\n",
        **UNREAD,
    }
    return Layout(
        "settings-file", files, read=("model.py", "behaviour.ini"), unread=(*UNREAD, "behaviour.bak")
    )


def module_form() -> Layout:
    """``mypkg.models:build``: a package of the repository, its sibling modules imported."""
    files: dict[str, str | bytes | Path] = {
        "onnx-gate.yml": linear_config("mypkg.models:build"),
        "mypkg/__init__.py": "",
        "mypkg/models.py": "from mypkg.blocks import Block\n\n\ndef build():\n    return Block()\n",
        "mypkg/blocks.py": BLOCK,
        **UNREAD,
    }
    read = ("mypkg/__init__.py", "mypkg/models.py", "mypkg/blocks.py")
    return Layout("module-form", files, read=read, pythonpath=(".",))


def onnx_data() -> Layout:
    """An ONNX-only model whose external data is model.onnx_data (as Optimum names it)."""
    files: dict[str, str | bytes | Path] = {
        "onnx-gate.yml": f'version: 1\nmodel: {{onnx: model.onnx}}\ntargets: {{runtimes: ["{RUNTIME}"], providers: [cpu]}}\n',
        **external_data_model(),
        **UNREAD,
    }
    return Layout("onnx-only-onnx_data", files, read=("model.onnx", "model.onnx_data"))


def distribution() -> Layout:
    """The factory imports a package installed in the environment (here a throwaway one)."""
    files: dict[str, str | bytes | Path] = {
        "onnx-gate.yml": linear_config("model.py:build"),
        "model.py": DIST_FACTORY,
        **fake_distribution("1.0"),
        **UNREAD,
    }
    return Layout("distribution-version", files, read=("model.py", BUMP), pythonpath=(ENV,))


def corpus() -> Layout:
    """The corpus models in one repository: DigitNet, MiniLM (its weights an installed package) and
    an ONNX-only scorer; each model's files are read by its own export only."""
    from tests.e2e import many_models

    files = {**many_models.files(), **UNREAD}
    read = {
        "digitnet/model.py": "digitnet",
        "digitnet/weights.pt": "digitnet",
        "digitnet/samples.npz": "digitnet",
        "minilm/model.py": "minilm",
        "minilm/samples.npz": "minilm",
        "scorer/model.onnx": "scorer",
        "scorer/test_data/test_data_set_0/input_0.pb": "scorer",
    }
    return Layout("corpus (3 models)", files, read=tuple(read), owner=read)


def every() -> list[Layout]:
    return [subdir_package(), settings_file(), module_form(), onnx_data(), distribution(), corpus()]


ENV = "env/site-packages"


def fake_distribution(version: str) -> dict[str, str | bytes | Path]:
    """A distribution ``fakedep`` of ``version``, installed in a throwaway site-packages."""
    info = f"{ENV}/fakedep-{version}.dist-info"
    return {
        f"{ENV}/fakedep/__init__.py": "SCALE = 1.0\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: fakedep\nVersion: {version}\n",
        f"{info}/top_level.txt": "fakedep\n",
        f"{info}/RECORD": "fakedep/__init__.py,,\n",
    }


def bump(repo: Path, version: str) -> None:
    """Install ``version`` of fakedep in place of the one there (its files unchanged)."""
    for old in (repo / ENV).glob("fakedep-*.dist-info"):
        shutil.rmtree(old)
    write(repo, {k: v for k, v in fake_distribution(version).items() if ".dist-info" in k})


def external_data_model() -> dict[str, str | bytes | Path]:
    """model.onnx (y = x @ W) whose W lives in model.onnx_data."""
    import tempfile

    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weight = numpy_helper.from_array(np.arange(8, dtype=np.float32).reshape(4, 2) / 8, "W")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["y"])],
        "scorer",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 2])],
        [weight],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 8
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "model.onnx"
        onnx.save_model(proto, path, save_as_external_data=True, location="model.onnx_data", size_threshold=0)
        return {
            "model.onnx": path.read_bytes(),
            "model.onnx_data": (Path(d) / "model.onnx_data").read_bytes(),
        }


def make(root: Path, layout: Layout) -> Path:
    """The layout as a repository at ``root`` (a ``.git`` marks its top); returns its config."""
    write(root, layout.files)
    (root / ".git").mkdir(exist_ok=True)
    return root / layout.config
