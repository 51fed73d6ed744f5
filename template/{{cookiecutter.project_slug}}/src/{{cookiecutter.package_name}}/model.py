"""The model: hashed bag of words -> one linear layer. Replace it with yours.

The evidence layer calls only what `evidence.ModelModule` and `evidence.Model` name:
`create` and `restore` here, `fit`, `predict` and `state` on the model. This file is
copied into every run folder next to reload.py, so it imports torch and the standard
library only (not the rest of the package).
"""

from __future__ import annotations

import random
import re
import zlib

import torch
from torch import nn

TOKEN_RE = re.compile(r"[a-z0-9]+")
# One document's tensors are tiny: one thread is several times faster than many on them (and
# the pilot and every reload of its checkpoint then compute the same way). A larger model drops this.
torch.set_num_threads(1)


def featurize(texts: list[str], features: int) -> torch.Tensor:
    """Counts of hashed tokens, log-scaled and L2-normalised (stable across machines)."""
    matrix = torch.zeros(len(texts), features)
    for row, text in enumerate(texts):
        buckets = [zlib.crc32(token.encode("utf-8")) % features for token in TOKEN_RE.findall(text.lower())]
        if buckets:
            matrix[row] = torch.bincount(torch.tensor(buckets), minlength=features).float()
    matrix = torch.log1p(matrix)
    return matrix / matrix.norm(dim=1, keepdim=True).clamp_min(1e-12)


class Classifier:
    def __init__(self, features: int, categories: int, training: dict | None = None) -> None:
        self.features = features
        self.linear = nn.Linear(features, categories)
        nn.init.zeros_(self.linear.weight)
        nn.init.zeros_(self.linear.bias)
        self.training = training
        self.optimizer = self.scheduler = None

    def fit(self, texts: list[str], labels: list[int], on_step) -> None:
        """Full-batch updates; classes weighted by inverse frequency so that a rare category
        is not drowned by the others after a single update."""
        self.optimizer = torch.optim.SGD(self.linear.parameters(), lr=self.training["learning_rate"])
        self.scheduler = torch.optim.lr_scheduler.StepLR(self.optimizer, step_size=1, gamma=self.training["scheduler_gamma"])
        x, y = featurize(texts, self.features), torch.tensor(labels, dtype=torch.long)
        counts = torch.bincount(y, minlength=self.linear.out_features).float()
        weights = torch.where(counts > 0, counts.sum() / (counts.clamp_min(1) * (counts > 0).sum()), torch.zeros_like(counts))
        self.linear.train()
        for step in range(1, self.training["steps"] + 1):
            self.optimizer.zero_grad()
            loss = nn.functional.cross_entropy(self.linear(x), y, weight=weights)
            on_step(step, float(loss.detach()))
            loss.backward()
            self.optimizer.step()
            self.scheduler.step()

    @torch.no_grad()
    def predict(self, text: str) -> tuple[int, float]:
        self.linear.eval()
        scores, classes = torch.softmax(self.linear(featurize([text], self.features)), dim=1).max(dim=1)
        return int(classes[0]), float(scores[0])

    def state(self) -> dict:
        return {
            "weights": self.linear.state_dict(),
            "optimizer": self.optimizer.state_dict() if self.optimizer else {},
            "scheduler": self.scheduler.state_dict() if self.scheduler else {},
            "rng": {"python": random.getstate(), "torch": torch.get_rng_state()},
            "features": self.features,
        }


def create(categories: list[str], parameters: dict) -> Classifier:
    random.seed(parameters["model"]["seed"])
    torch.manual_seed(parameters["model"]["seed"])
    return Classifier(parameters["model"]["features"], len(categories), parameters["training"])


def restore(state: dict) -> Classifier:
    """The trained model back; the optimizer and scheduler states stay as loaded (training is over)."""
    weights = state["weights"]
    classifier = Classifier(int(state["features"]), weights["weight"].shape[0])
    classifier.linear.load_state_dict(weights)
    version, internal, gauss = state["rng"]["python"]
    random.setstate((version, tuple(internal), gauss))
    torch.set_rng_state(state["rng"]["torch"])
    return classifier
