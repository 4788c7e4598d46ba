"""Checkpoints whose config asks for sizes out of range (issue 28 item 2: a grid of 100000 x 100000
was a 317 TB allocation): refused from the config, before the network is built."""

from __future__ import annotations

from pathlib import Path

from hostile import Case


def observer_checkpoint(**model: object):
    """``{in}/c.pt``: a bc-mlp checkpoint (random weights) whose config.model has ``model`` fields."""
    def build(inp: Path) -> None:
        import torch

        from bib.observers.learned import learned_class

        ckpt = learned_class("bc-mlp")().checkpoint()
        ckpt["config"]["model"].update(model)
        torch.save(ckpt, inp / "c.pt")
    return build


def policy_checkpoint(**config: object):
    """``{in}/p.pt``: a policy-net checkpoint (random weights) whose config has ``config`` fields."""
    def build(inp: Path) -> None:
        import json

        import torch

        from bib.agency.policy_net import NetConfig, PolicyNet, save

        save(PolicyNet(NetConfig()), inp / "p.pt")
        blob = torch.load(inp / "p.pt", weights_only=True)
        blob["config"] = json.dumps({**json.loads(blob["config"]), **config})
        torch.save(blob, inp / "p.pt")
    return build


OBSERVER = [
    ("grid-100000", {"grid": [100000, 100000]}, "field 'grid'"),
    ("grid-zero", {"grid": [0, 10]}, "field 'grid'"),
    ("grid-three", {"grid": [10, 10, 10]}, "field 'grid'"),
    ("image-size-huge", {"image_size": 1 << 20}, "field 'image_size'"),
    ("cell-px-huge", {"cell_px": 100000}, "field 'cell_px'"),
    ("embed-huge", {"embed": 10 ** 9}, "field 'embed'"),
    ("hidden-zero", {"symbolic_hidden": 0}, "field 'symbolic_hidden'"),
    ("policy-layers-huge", {"policy": [256, 10 ** 8]}, "field 'policy'"),
    ("policy-negative", {"policy": [-5]}, "field 'policy'"),
]
POLICY = [
    ("width-huge", {"width": 10 ** 8}, "field 'width'"),
    ("hidden-huge", {"hidden": 10 ** 9}, "field 'hidden'"),
    ("dilations-huge", {"dilations": [1, 10 ** 7]}, "field 'dilations'"),
    ("width-zero", {"width": 0}, "field 'width'"),
]

CASES = [
    *[Case(f"score-checkpoint-{name}", ["score", "bc-mlp", "{in}/set", "--checkpoint", "{in}/c.pt", "--out", "{out}"],
           build=observer_checkpoint(**model), culprit=f"c.pt: config.model: {culprit}") for name, model, culprit in OBSERVER],
    *[Case(f"agency-checkpoint-{name}", ["agency", "run", "--agent", "policy-net", "--suite", "keys", "--grids", "1",
                                         "--checkpoint", "{in}/p.pt", "--out", "{out}"],
           build=policy_checkpoint(**config), culprit=f"p.pt: config: {culprit}") for name, config, culprit in POLICY],
]


def inflating_checkpoint(declared: int = 3 << 30):
    """``{in}/c.pt``: a valid bc-mlp checkpoint whose first tensor record declares ``declared`` bytes
    inflated (the central directory's and the local header's uncompressed size patched): torch would
    allocate that much before finding the record short (issue 39: 3.3 GB RSS)."""
    def build(inp: Path) -> None:
        import struct
        import zipfile

        import torch

        from bib.observers.learned import learned_class

        torch.save(learned_class("bc-mlp")().checkpoint(), inp / "c.pt")
        data = bytearray((inp / "c.pt").read_bytes())
        with zipfile.ZipFile(inp / "c.pt") as zf:
            info = next(i for i in zf.infolist() if i.filename.endswith("/data/0"))
        name = info.filename.encode()
        for sig, offset in ((b"PK\x01\x02", 24), (b"PK\x03\x04", 22)):
            at = 0
            while (at := data.find(sig, at)) >= 0:
                name_at = at + (46 if sig == b"PK\x01\x02" else 30)
                if data[name_at:name_at + len(name)] == name:
                    data[at + offset:at + offset + 4] = struct.pack("<I", declared)
                at += 4
        (inp / "c.pt").write_bytes(bytes(data))
    return build


def fifo_checkpoint(inp: Path) -> None:
    import os

    os.mkfifo(inp / "c.pt")


CASES += [
    Case("score-checkpoint-record-inflates-to-3-gib",
         ["score", "bc-mlp", "{in}/set", "--checkpoint", "{in}/c.pt", "--out", "{out}"], build=inflating_checkpoint(),
         culprit="{in}/c.pt: the checkpoint's records inflate to more than 1024 MiB"),
    Case("score-checkpoint-is-a-fifo", ["score", "bc-mlp", "{in}/set", "--checkpoint", "{in}/c.pt", "--out", "{out}"],
         build=fifo_checkpoint, culprit="bib reads regular files only"),
]
