"""Job files for engines that already exist: SkyPilot tasks, Kubernetes Indexed Jobs, Slurm sbatch scripts.

``inputs`` reads what every job is made from once (bundle.toml, the lock's sha256, the
order in plan.toml, the image); ``launch`` holds the command lines they share (the
diagnostics first on every node, then the project's entry through torchrun); one module
per engine renders its file through a serializer; ``jobfile`` writes it with a header
that records the lock and the image. Nothing here contacts a cloud, a cluster or an engine.
"""
