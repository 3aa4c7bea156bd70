"""`envdoctor fleet`: one report for every node of a multi-node job, over torch.distributed.

Launched like training (``torchrun --nnodes N --nproc-per-node G -m envdoctor fleet``, under ``srun`` or a
Kubernetes PyTorchJob): the launcher sets RANK, WORLD_SIZE, LOCAL_RANK ... and the rendezvous; envdoctor brings
no transport, rendezvous or scheduler of its own. The one local rank 0 of each node collects that node's facts
with the probes of `check` (``app.collect``); every rank names its own device; rank 0 gathers everything with
point-to-point messages of torch.distributed (each with a deadline, so a dead rank is named, not waited on),
judges each node's facts with the one judge (``services.collect.judge``), adds the fleet checks (``checks/fleet.py``: pure
functions over the nodes' facts and the ranks' measurements, registered with every other check) and alone
prints the report.

Modules: ``launch`` (the launcher's environment), ``arrival`` (every rank's arrival and exit, tracked from its
launch on the launcher's store), ``comm`` (messages and deadlines over torch.distributed),
``measure`` (per-rank kernels and the all-reduce sweep), ``rank`` (what each rank does), ``model`` (the fleet's
data, JSON in and out), ``report`` (the fleet report; its checks are envdoctor/checks/fleet.py), ``render``
(console, JSON, Markdown), ``testing`` (the test hooks), ``cli`` (the command's options).
"""
