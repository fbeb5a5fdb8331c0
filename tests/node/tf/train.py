"""TensorFlow training for the real-node tests (tests/node.rs), run in every replica of a TFJob.

It reads only what the operator gives it (TF_CONFIG) and reports what TensorFlow itself says,
as lines `TFJOB-TEST {json}` on standard output, which the tests read with `kubectl logs`:
  tf_config   TF_CONFIG as the process received it
  dns_wait    how long until every host of TF_CONFIG resolved, its own to this pod (seconds; any not)
  peers       (mwms, after training) the addresses TF_CONFIG's hosts resolve to
  resolver    TFConfigClusterResolver's task type, index and cluster spec
  strategy    the strategy's num_replicas_in_sync
  variables   where the variables live (device strings)
  step        a training step: its index and loss
  done        the final weights (values and their sha256), first and last losses
  evaluated   (evaluator) the checkpoint it evaluated and the loss on held-out data

Modes (the first argument):
  mwms        MultiWorkerMirroredStrategy; every worker trains on its own data (seeded by its
              index), gradients are all-reduced, so every worker ends with the same weights.
  ps          ParameterServerStrategy: the chief coordinates, workers and PS serve; the chief
              writes checkpoints to /shared and waits for the evaluator if the job has one.
  Options: --steps N (default 30), --step-seconds S (a pause after each step, so a test can
  kill a worker mid-training).
  mwms only, for recovery tests (tests/node/recovery.rs), all on a directory DIR shared by the
  job's pods (a hostPath: they run on the one node):
  --checkpoint DIR  checkpoint every step (tf.train.CheckpointManager: worker 0 into DIR, the
              others into DIR/worker-<i>, as TensorFlow's multi-worker guide does) and restore
              from DIR's latest checkpoint at start; reports `start` with the step it starts
              from (0, or the restored one).
  --reports FILE  also append every report, with this process's run id, task index and
              wall-clock time, to FILE: the reports of pods already deleted stay readable.
  --exit-at K  worker 1 exits with code 1 after step K, only on its first run (a marker file
              next to FILE says it has).
  ps only, for the failure and success policies (tests/node/policies.rs):
  --ps-exit S:CODE  the parameter server exits with CODE after serving S seconds.
  --no-evaluator-wait  the chief ends once it has written its checkpoint, without waiting for
              the evaluator's verdict.
  --evaluate-seconds S  the evaluator's evaluation takes S seconds (it starts once the chief's
              checkpoint exists), so it runs on after the chief has ended.
"""

import hashlib
import json
import os
import socket
import sys
import time


def option(name, default):
    if name in sys.argv:
        return type(default)(sys.argv[sys.argv.index(name) + 1])
    return default


MODE = sys.argv[1]
STEPS = option("--steps", 30)
STEP_SECONDS = option("--step-seconds", 0.0)
CHECKPOINT = option("--checkpoint", "")
REPORTS = option("--reports", "")
EXIT_AT = option("--exit-at", -1)
PS_EXIT = option("--ps-exit", "")
EVALUATE_SECONDS = option("--evaluate-seconds", 0.0)

tf_config = json.loads(os.environ.get("TF_CONFIG", "{}"))
TASK = tf_config.get("task", {}).get("index", 0)
# This process among every run of every pod of the job (pods of a restart keep their names).
RUN = "%s-%d-%d" % (socket.gethostname(), os.getpid(), time.time_ns())


def emit(event, **fields):
    report = {"event": event, **fields}
    print("TFJOB-TEST " + json.dumps(report, sort_keys=True), flush=True)
    if REPORTS:
        report.update(run=RUN, task=TASK, time=time.time())
        # One short write in append mode: lines of concurrent writers do not interleave.
        with open(REPORTS, "a") as f:
            f.write(json.dumps(report, sort_keys=True) + "\n")


emit("tf_config", tf_config=tf_config, hostname=socket.gethostname())


def host(address):
    """The host of a TF_CONFIG address (`host:port`)."""
    return address.rsplit(":", 1)[0]


def hosts():
    """Every host of TF_CONFIG's cluster, sorted, once each."""
    return sorted({host(a) for v in tf_config.get("cluster", {}).values() for a in v})


def addresses_of(name):
    """The IPv4 addresses NAME resolves to (OSError when it does not)."""
    return {a[4][0] for a in socket.getaddrinfo(name, None, socket.AF_INET)}


def resolve_peers():
    """The addresses TF_CONFIG's hosts resolve to, asked after training (every peer runs)."""
    resolved = {}
    for h in hosts():
        try:
            resolved[h] = sorted(addresses_of(h))
        except OSError as e:
            resolved[h] = "unresolved: %s" % e
    return resolved


def wait_for_peers(limit=60.0):
    """Waits, at most LIMIT seconds, until every host of TF_CONFIG resolves and this task's own
    name resolves to this pod's address. A name resolves only once its pod has an address and
    the EndpointSlice controller and CoreDNS have caught up: on a loaded node that lagged the
    containers' start by seconds, and after a whole-job restart the name first resolved to the
    deleted pod's address, then to nothing, then to the new one. TensorFlow fails its first
    collective at once on a name that does not resolve (gRPC UNAVAILABLE "Temporary failure in
    name resolution": the search list ends with the bare `<pod>.<ns>.svc`, which CoreDNS
    answers SERVFAIL), so such a job failed before its first step. Each task checking its own
    name suffices for its peers too: MultiWorkerMirroredStrategy's coordination service waits
    for every task to connect before any collective. Training code on Kubernetes waits like
    this, or is restarted."""
    cluster = tf_config.get("cluster", {})
    task = tf_config.get("task", {})
    own = None
    if task.get("type") in cluster:
        own = host(cluster[task["type"]][task.get("index", 0)])
    # The kubelet's /etc/hosts maps the pod's hostname to its address.
    address = socket.gethostbyname(socket.gethostname())

    def current(name):
        try:
            found = addresses_of(name)
        except OSError:
            return False
        return name != own or address in found

    start = time.time()
    while True:
        pending = [h for h in hosts() if not current(h)]
        if not pending or time.time() - start > limit:
            break
        time.sleep(0.2)
    emit("dns_wait", seconds=round(time.time() - start, 2), unresolved=pending)


import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

wait_for_peers()

# TF's own INFO lines (e.g. "Collective all_reduce tensors: ... group_size = 2") go to stderr.
tf.get_logger().setLevel("INFO")

resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
emit(
    "resolver",
    task_type=resolver.task_type,
    task_id=resolver.task_id,
    cluster=resolver.cluster_spec().as_dict(),
    tf_version=tf.__version__,
)

TRUE_W = np.array([[1.0], [-2.0], [3.0], [0.5]], dtype=np.float32)


def data(seed, n=64):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype(np.float32)
    y = x @ TRUE_W + 0.25 + rng.normal(scale=0.01, size=(n, 1)).astype(np.float32)
    return x, y


def weights_report(w, b):
    values = np.concatenate([w.numpy().ravel(), b.numpy().ravel()]).astype(np.float32)
    return {
        "weights": [float(v) for v in values],
        "weights_sha256": hashlib.sha256(values.tobytes()).hexdigest(),
    }


def run_mwms():
    strategy = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver)
    emit("strategy", kind="MultiWorkerMirroredStrategy", num_replicas_in_sync=strategy.num_replicas_in_sync)
    with strategy.scope():
        w = tf.Variable(tf.zeros([4, 1]), aggregation=tf.VariableAggregation.MEAN, name="w")
        b = tf.Variable(tf.zeros([1]), aggregation=tf.VariableAggregation.MEAN, name="b")
    emit("variables", devices=[w.device, b.device])
    # Each worker's own data: without the all-reduce their weights would differ.
    x, y = data(100 + resolver.task_id)

    @tf.function
    def train_step(x, y):
        def replica_fn(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
            gw, gb = tape.gradient(loss, [w, b])
            ctx = tf.distribute.get_replica_context()
            gw, gb = ctx.all_reduce(tf.distribute.ReduceOp.MEAN, [gw, gb])
            w.assign_sub(0.1 * gw)
            b.assign_sub(0.1 * gb)
            return loss

        losses = strategy.run(replica_fn, args=(x, y))
        return strategy.reduce(tf.distribute.ReduceOp.MEAN, losses, axis=None)

    start, save = 0, None
    if CHECKPOINT:
        # The next step to run, saved with the weights.
        next_step = tf.Variable(0, dtype=tf.int64, name="next_step")
        checkpoint = tf.train.Checkpoint(w=w, b=b, next_step=next_step)
        latest = tf.train.latest_checkpoint(CHECKPOINT)
        if latest:
            checkpoint.restore(latest).assert_existing_objects_matched()
            start = int(next_step.numpy())
        # Every worker saves (saving may take part in collectives); only worker 0's copy is read.
        directory = CHECKPOINT if TASK == 0 else os.path.join(CHECKPOINT, "worker-%d" % TASK)
        manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=2)

        def save(step):
            next_step.assign(step + 1)
            manager.save()

        emit("start", step=start, checkpoint=latest)
    marker = os.path.join(os.path.dirname(REPORTS) or ".", "exited")

    losses = []
    for step in range(start, STEPS):
        loss = float(train_step(tf.constant(x), tf.constant(y)))
        losses.append(loss)
        emit("step", step=step, loss=loss)
        if save:
            save(step)
        if step == EXIT_AT and TASK == 1 and not os.path.exists(marker):
            open(marker, "w").close()
            emit("exit", step=step, code=1)
            os._exit(1)
        if STEP_SECONDS:
            time.sleep(STEP_SECONDS)
    emit("peers", resolved=resolve_peers())
    emit("done", loss_first=losses[0] if losses else None, loss_last=losses[-1] if losses else None,
         steps=len(losses), **weights_report(w, b))


def run_ps():
    if resolver.task_type in ("worker", "ps"):
        server = tf.distribute.Server(
            resolver.cluster_spec(),
            job_name=resolver.task_type,
            task_index=resolver.task_id,
            protocol=resolver.rpc_layer or "grpc",
            start=True,
        )
        emit("server", target=server.target)
        if resolver.task_type == "ps" and PS_EXIT:
            seconds, code = PS_EXIT.split(":")
            time.sleep(float(seconds))
            emit("exit", code=int(code))
            os._exit(int(code))
        server.join()
        return
    if resolver.task_type == "evaluator":
        return run_evaluator()
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    emit("strategy", kind="ParameterServerStrategy", num_workers=getattr(strategy.extended, "_num_workers", None),
         num_ps=getattr(strategy.extended, "_num_ps", None))
    with strategy.scope():
        w = tf.Variable(tf.zeros([4, 1]), name="w")
        b = tf.Variable(tf.zeros([1]), name="b")
    emit("variables", devices=[w.device, b.device])
    x, y = data(7, n=256)

    def dataset_fn():
        return tf.data.Dataset.from_tensor_slices((x, y)).shuffle(256, seed=1).batch(32).repeat()

    per_worker = iter(coordinator.create_per_worker_dataset(dataset_fn))

    @tf.function
    def step_fn(iterator):
        def replica_fn(bx, by):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(tf.matmul(bx, w) + b - by))
            gw, gb = tape.gradient(loss, [w, b])
            w.assign_sub(0.1 * gw)
            b.assign_sub(0.1 * gb)
            return loss

        bx, by = next(iterator)
        return strategy.run(replica_fn, args=(bx, by))

    losses = []
    for step in range(STEPS):
        loss = float(coordinator.schedule(step_fn, args=(per_worker,)).fetch())
        losses.append(loss)
        emit("step", step=step, loss=loss)
        time.sleep(STEP_SECONDS)
    coordinator.join()
    report = weights_report(w, b)
    evaluator = "evaluator" in resolver.cluster_spec().as_dict()
    if evaluator:
        checkpoint = tf.train.Checkpoint(w=w, b=b).write("/shared/final")
        emit("checkpoint", path=checkpoint)
        deadline = time.time() + 120
        while ("--no-evaluator-wait" not in sys.argv and not os.path.exists("/shared/evaluated")
               and time.time() < deadline):
            time.sleep(0.5)
    emit("done", loss_first=losses[0], loss_last=losses[-1], steps=len(losses), **report)


def run_evaluator():
    # A sidecar evaluator: TF_CONFIG names it (task type "evaluator"); it trains nothing and
    # reads the chief's checkpoint from the shared volume. It serves too: Kubeflow's TF_CONFIG
    # lists the evaluator in `cluster`, and ParameterServerStrategy's coordinator connects to
    # every task there, so without a server here the chief waits for it for ever (TF 2.21).
    server = tf.distribute.Server(
        resolver.cluster_spec(),
        job_name="evaluator",
        task_index=resolver.task_id,
        protocol=resolver.rpc_layer or "grpc",
        start=True,
    )
    emit("server", target=server.target)
    w = tf.Variable(tf.zeros([4, 1]), name="w")
    b = tf.Variable(tf.zeros([1]), name="b")
    deadline = time.time() + 180
    while not tf.io.gfile.exists("/shared/final.index"):
        if time.time() > deadline:
            emit("evaluated", error="no checkpoint after 180 s")
            sys.exit(1)
        time.sleep(0.5)
    emit("evaluating", seconds=EVALUATE_SECONDS)
    time.sleep(EVALUATE_SECONDS)
    tf.train.Checkpoint(w=w, b=b).read("/shared/final").expect_partial()
    x, y = data(999, n=256)
    loss = float(tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y)))
    emit("evaluated", checkpoint="/shared/final", loss=loss, **weights_report(w, b))
    open("/shared/evaluated", "w").close()


{"mwms": run_mwms, "ps": run_ps}[MODE]()
