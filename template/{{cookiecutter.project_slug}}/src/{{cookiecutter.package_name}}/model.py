"""A small document classifier: hashed bag of words -> one linear layer."""

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
        for token in TOKEN_RE.findall(text.lower()):
            matrix[row, zlib.crc32(token.encode("utf-8")) % features] += 1.0
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


def train(model: Classifier, optimizer, scheduler, x: torch.Tensor, y: torch.Tensor, steps: int) -> list[float]:
    """Full-batch updates on the labelled accepted documents; returns the loss of each step.

    Classes are weighted by inverse frequency so that a category with few examples is
    not drowned by the others after a single update.
    """
    counts = torch.bincount(y, minlength=model.linear.out_features).float()
    weights = torch.where(counts > 0, counts.sum() / (counts.clamp_min(1) * (counts > 0).sum()), torch.zeros_like(counts))
    losses = []
    model.train()
    for _ in range(steps):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y, weight=weights)
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


def rng_states() -> dict:
    return {"python": random.getstate(), "torch": torch.get_rng_state()}
