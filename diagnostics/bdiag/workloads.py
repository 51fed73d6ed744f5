"""Small, deterministic workloads shared by the stages and their fresh-process helpers."""

from __future__ import annotations

import ctypes
import hashlib
import random


def _torch():
    import torch

    return torch


class ShmDataset:
    """Items of 1 MiB each: DataLoader workers hand them back through /dev/shm."""

    def __init__(self, length: int) -> None:
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int):
        return _torch().full((256, 1024), float(index))  # 1 MiB of float32


def training_objects(device: str, width: int = 512, depth: int = 4, seed: int = 1234):
    """Model, optimizer, scheduler and grad scaler as a training script would hold them."""
    torch = _torch()
    torch.manual_seed(seed)
    layers = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.GELU()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(width, 10)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.9)
    scaler = torch.amp.GradScaler(device.split(":")[0])
    return model, optimizer, scheduler, scaler


def train_steps(objects, device: str, steps: int = 2, batch: int = 16) -> dict:
    torch = _torch()
    model, optimizer, scheduler, scaler = objects
    width = model[0].in_features
    for _ in range(steps):
        x = torch.randn(batch, width, device=device)
        target = torch.randint(0, 10, (batch,), device=device)
        loss = torch.nn.functional.cross_entropy(model(x), target)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
    return {"step": steps, "epoch": 0, "samples": steps * batch, "loss": float(loss.detach())}


def checkpoint_state(objects, progress: dict) -> dict:
    torch = _torch()
    model, optimizer, scheduler, scaler = objects
    return {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "scaler": scaler.state_dict(),
        "rng": {
            "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
            "python": random.getstate(),
        },
        "progress": progress,
    }


def restore(objects, state: dict) -> None:
    """Load a checkpoint into fresh objects and RNGs, as a resumed run does."""
    torch = _torch()
    model, optimizer, scheduler, scaler = objects
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    scaler.load_state_dict(state["scaler"])
    torch.set_rng_state(state["rng"]["torch"])
    if state["rng"]["cuda"]:
        torch.cuda.set_rng_state_all(state["rng"]["cuda"])
    random.setstate(_as_tuple(state["rng"]["python"]))


def _as_tuple(value):
    return tuple(_as_tuple(item) for item in value) if isinstance(value, (list, tuple)) else value


def digests(value, path: str = "") -> dict:
    """Flatten nested state into path -> digest (tensors by their bytes, the rest by repr)."""
    torch = _torch()
    if isinstance(value, torch.Tensor):
        return {path: tensor_digest(torch, value)}
    if isinstance(value, dict):
        found = {}
        for key in value:
            found.update(digests(value[key], f"{path}/{key}"))
        return found
    if isinstance(value, (list, tuple)) and any(isinstance(item, (torch.Tensor, dict, list, tuple)) for item in value):
        found = {}
        for index, item in enumerate(value):
            found.update(digests(item, f"{path}[{index}]"))
        return found
    return {path: repr(_as_tuple(value))}


def default_step(device, width: int = 4096, depth: int = 4, batch: int = 256) -> dict:
    """One representative training step (forward, backward, AdamW) when the project declares none."""
    objects = training_objects(str(device), width=width, depth=depth)
    progress = train_steps(objects, str(device), steps=1, batch=batch)
    parameters = sum(p.numel() for p in objects[0].parameters())
    return {"model": f"{depth + 1}-layer MLP, width {width}, batch {batch}", "parameters": parameters, "loss": progress["loss"]}


def tensor_digest(torch, tensor) -> str:
    """sha256 of a tensor's dtype, shape and raw bytes (no numpy needed)."""
    data = tensor.detach().to("cpu").contiguous()
    digest = hashlib.sha256(f"{data.dtype}{tuple(data.shape)}".encode())
    if data.numel():
        digest.update(ctypes.string_at(data.data_ptr(), data.numel() * data.element_size()))
    return digest.hexdigest()
