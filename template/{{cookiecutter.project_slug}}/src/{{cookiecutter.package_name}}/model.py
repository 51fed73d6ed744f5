"""A small document classifier: hashed bag of words -> one linear layer.

Stand-alone on purpose (torch and the standard library only): every run copies this file
into runs/<id>/ so that its checkpoint can be reloaded without the project.
"""

from __future__ import annotations

import random
import re
import zlib

import torch
from torch import nn

TOKEN_RE = re.compile(r"[a-z0-9]+")


def featurize(texts: list[str], features: int) -> torch.Tensor:
    """Counts of hashed tokens, log-scaled and L2-normalised (stable across machines)."""
    matrix = torch.zeros(len(texts), features)
    for row, text in enumerate(texts):
        buckets = [zlib.crc32(token.encode("utf-8")) % features for token in TOKEN_RE.findall(text.lower())]
        if buckets:
            matrix[row] = torch.bincount(torch.tensor(buckets), minlength=features).float()
    matrix = torch.log1p(matrix)
    return matrix / matrix.norm(dim=1, keepdim=True).clamp_min(1e-12)


class Classifier(nn.Module):
    def __init__(self, features: int, categories: int) -> None:
        super().__init__()
        self.linear = nn.Linear(features, categories)
        nn.init.zeros_(self.linear.weight)
        nn.init.zeros_(self.linear.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)


def make_training(model: Classifier, training: dict):
    optimizer = torch.optim.SGD(model.parameters(), lr=float(training.get("learning_rate", 0.5)))
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=float(training.get("scheduler_gamma", 0.5)))
    return optimizer, scheduler


def train(model: Classifier, optimizer, scheduler, x: torch.Tensor, y: torch.Tensor, steps: int, on_step=None) -> list[float]:
    """Full-batch updates on the labelled accepted documents; returns the loss of each step.

    Classes are weighted by inverse frequency so that a category with few examples is
    not drowned by the others after a single update. ``on_step(step, loss)`` is called
    after each step's loss is known (the stop rules raise from it).
    """
    counts = torch.bincount(y, minlength=model.linear.out_features).float()
    weights = torch.where(counts > 0, counts.sum() / (counts.clamp_min(1) * (counts > 0).sum()), torch.zeros_like(counts))
    losses = []
    model.train()
    for _ in range(steps):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y, weight=weights)
        if on_step is not None:
            on_step(len(losses) + 1, float(loss.detach()))
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(float(loss.detach()))
    return losses


@torch.no_grad()
def predict(model: Classifier, x: torch.Tensor) -> tuple[list[int], list[float]]:
    model.eval()
    probabilities = torch.softmax(model(x), dim=1)
    scores, classes = probabilities.max(dim=1)
    return classes.tolist(), scores.tolist()


def predict_one(model: Classifier, text: str, features: int) -> tuple[int, float]:
    """One document at a time, as the pilot writes it: the same numbers in every process."""
    classes, scores = predict(model, featurize([text], features))
    return classes[0], scores[0]


def rng_states() -> dict:
    return {"python": random.getstate(), "torch": torch.get_rng_state()}


def restore_rng(states: dict) -> None:
    version, internal, gauss = states["python"]
    random.setstate((version, tuple(internal), gauss))
    torch.set_rng_state(states["torch"])


def load_checkpoint(path, training: dict, with_optimizer: bool = True):
    """Model, optimizer, scheduler and RNG states back from ``path`` (no pickled code runs).

    Without ``with_optimizer`` (training finished: only predictions remain) the optimizer
    and scheduler states stay as loaded tensors and are not rebuilt into objects, which
    spares the first optimizer's one-off import cost (about 2 s) in a resumed run.
    """
    state = torch.load(path, map_location="cpu", weights_only=True)
    classifier = Classifier(int(state["features"]), len(state["categories"]))
    classifier.load_state_dict(state["model"])
    optimizer = scheduler = None
    if with_optimizer:
        optimizer, scheduler = make_training(classifier, training)
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
    elif not {"optimizer", "scheduler"} <= set(state):
        raise KeyError("the checkpoint lacks the optimizer or scheduler state")
    restore_rng(state["rng"])
    return state, classifier, optimizer, scheduler
