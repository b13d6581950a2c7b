"""profiles/slurm on a real SLURM cluster: a single-node cluster on localhost (munged,
slurmctld, slurmd from Debian's `slurm-wlm` and `munge`, installed with apt-get when
missing), two targets of the test profile built through `snakemake-executor-plugin-slurm`,
their tables and raw outputs compared byte for byte with a local run.

Needs root (to install the packages and run slurmd) and the ports 6817/6818; without them
the test fails, saying why. `NETWORKEDFL_SKIP_SLURM=1` skips it (CI does not set it).

The cluster: no accounting database (`accounting_storage/none`, so the plugin's status
command is `squeue`, not its default `sacct`), configless (slurmctld serves its config
to slurmd, and slurmd leaves it in /run/slurm/conf, where the jobs' `srun` finds it: the
plugin's job step strips every SLURM_* variable, SLURM_CONF included, from srun's
environment). Its config, state, spool and logs are in a fresh temporary directory;
/etc/slurm is not written, and slurmd's link /run/slurm/conf is removed at teardown, when
the daemons this test started are stopped by PID (a munged already running is reused).
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slurm

SKIP_VAR = "NETWORKEDFL_SKIP_SLURM"
TARGETS = ["gtv_fig01_empirical_graph", "gtv_fig12_star_graph"]
PARTITION = "networkedfl_test"
ACCOUNT = "networkedfl_test"
BINARIES = ["munged", "munge", "unmunge", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo",
            "scontrol", "scancel", "srun"]
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
MUNGE_KEY = Path("/etc/munge/munge.key")
MUNGE_RUN = Path("/run/munge")
CONFIGLESS_CACHE = Path("/run/slurm/conf")


def _tail(text, n=3000):
    return text[-n:] if text else ""


def _run(cmd, timeout=60, **kwargs):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kwargs)


def _system_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env["PATH"] = SYSTEM_PATH
    env.update(extra)
    return env


def _install_packages():
    """apt-get install slurm-wlm munge where a binary is missing (CI runs as root)."""
    missing = [b for b in BINARIES if shutil.which(b, path=SYSTEM_PATH) is None]
    if not missing:
        return
    if shutil.which("apt-get") is None:
        pytest.fail(f"SLURM binaries missing ({', '.join(missing)}) and no apt-get to install "
                    f"slurm-wlm and munge; install them or set {SKIP_VAR}=1 to skip this test")
    env = _system_env(DEBIAN_FRONTEND="noninteractive")
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", "slurm-wlm", "munge"]
    proc = _run(install, timeout=900, env=env)
    if proc.returncode != 0:  # stale or absent package lists
        update = _run(["apt-get", "update", "-q"], timeout=600, env=env)
        proc = _run(install, timeout=900, env=env)
        if proc.returncode != 0:
            pytest.fail(f"`{' '.join(install)}` failed (after apt-get update: rc {update.returncode}); "
                        f"set {SKIP_VAR}=1 to skip this test.\n{_tail(update.stderr, 1000)}\n"
                        f"{_tail(proc.stdout)}\n{_tail(proc.stderr)}")
    still = [b for b in BINARIES if shutil.which(b, path=SYSTEM_PATH) is None]
    if still:
        pytest.fail(f"after installing slurm-wlm and munge, still missing: {', '.join(still)}")


def _munge_works():
    encoded = _run(["munge", "-n"], timeout=10, env=_system_env())
    if encoded.returncode != 0:
        return False
    return _run(["unmunge"], input=encoded.stdout, timeout=10, env=_system_env()).returncode == 0


def _wait(condition, timeout, what, logs=()):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.5)
    text = "\n".join(f"--- {p}:\n{_tail(Path(p).read_text(errors='replace'))}"
                     for p in logs if Path(p).exists())
    pytest.fail(f"{what} not ready after {timeout} s\n{text}")


def _start_munged(started):
    """Reuse a running munged; otherwise start one (as the munge user, no systemd)."""
    if _munge_works():
        return
    if not MUNGE_KEY.exists():  # normally created by the package
        proc = _run(["mungekey", "--create", "--keyfile", str(MUNGE_KEY)], env=_system_env())
        assert proc.returncode == 0, proc.stderr
        shutil.chown(MUNGE_KEY, "munge", "munge")
        MUNGE_KEY.chmod(0o600)
    MUNGE_RUN.mkdir(parents=True, exist_ok=True)
    shutil.chown(MUNGE_RUN, "munge", "munge")
    MUNGE_RUN.chmod(0o755)
    started.append(subprocess.Popen(["munged", "--foreground"], user="munge", group="munge",
                                    env=_system_env(), stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL))
    _wait(_munge_works, 30, "munged", ["/var/log/munge/munged.log"])


def _slurm_conf(directory: Path, host: str, profile: dict) -> str:
    """Single node, no accounting, configless. The node declares at least the largest
    request of profiles/slurm (cpus_per_task, mem_mb), with `config_overrides` so that a
    smaller CI machine still runs the jobs (the test jobs are small)."""
    requests = [profile["default-resources"], *profile.get("set-resources", {}).values()]
    cpus = max([os.cpu_count() or 1, *(int(r.get("cpus_per_task", 1)) for r in requests)])
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    memory = max([memory, *(int(r.get("mem_mb", 0)) for r in requests)])
    for sub in ("state", "spool"):
        (directory / sub).mkdir()
    return f"""\
ClusterName=networkedfl
SlurmctldHost={host}(127.0.0.1)
SlurmctldParameters=enable_configless
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation={directory}/state
SlurmdSpoolDir={directory}/spool
SlurmctldPidFile={directory}/slurmctld.pid
SlurmdPidFile={directory}/slurmd.pid
SlurmctldLogFile={directory}/slurmctld.log
SlurmdLogFile={directory}/slurmd.log
SlurmctldPort=6817
SlurmdPort=6818
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory} State=UNKNOWN
PartitionName={PARTITION} Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


def _stop(proc: subprocess.Popen):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


@pytest.fixture(scope="session")
def slurm_cluster(repo, tmp_path_factory):
    """A single-node SLURM cluster on localhost; yields the environment of its clients."""
    if os.environ.get(SKIP_VAR) == "1":
        pytest.skip(f"{SKIP_VAR}=1: the local SLURM cluster test is skipped")
    if os.geteuid() != 0:
        pytest.fail(f"the SLURM test runs a local cluster and needs root (to install slurm-wlm "
                    f"and munge and to run slurmd); set {SKIP_VAR}=1 to skip it")
    _install_packages()
    if Path("/etc/slurm/slurm.conf").exists():
        pytest.fail("/etc/slurm/slurm.conf exists: this machine has its own SLURM configuration, "
                    "which the test cluster's jobs would read; run elsewhere or set "
                    f"{SKIP_VAR}=1")
    for port in (6817, 6818):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                pytest.fail(f"port {port} is in use (a SLURM daemon running?): the test cluster "
                            f"needs 6817 and 6818; set {SKIP_VAR}=1 to skip")
    directory = tmp_path_factory.mktemp("slurm")
    host = socket.gethostname().split(".")[0]
    profile = yaml.safe_load((repo / "profiles" / "slurm" / "config.yaml").read_text())
    conf = directory / "slurm.conf"
    conf.write_text(_slurm_conf(directory, host, profile))
    env = _system_env(SLURM_CONF=str(conf))
    started: list[subprocess.Popen] = []
    had_cache = CONFIGLESS_CACHE.exists() or CONFIGLESS_CACHE.is_symlink()
    try:
        _start_munged(started)
        daemon_env = _system_env()
        started.append(subprocess.Popen(["slurmctld", "-D", "-c", "-f", str(conf)], env=daemon_env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        _wait(lambda: _run(["scontrol", "ping"], env=env).stdout.count("UP") >= 1, 30,
              "slurmctld", [directory / "slurmctld.log"])
        started.append(subprocess.Popen(["slurmd", "-D", "-N", host, "--conf-server", "127.0.0.1:6817"],
                                        env=daemon_env, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL))

        def node_idle():
            state = _run(["sinfo", "-h", "-N", "-o", "%T"], env=env).stdout.strip()
            return state == "idle"

        _wait(node_idle, 60, "slurmd (node idle)", [directory / "slurmctld.log", directory / "slurmd.log"])
        yield {"env": env, "directory": directory, "partition": PARTITION, "account": ACCOUNT}
    finally:
        if started:
            _run(["scancel", "--partition", PARTITION], env=env)
        for proc in reversed(started):  # slurmd, slurmctld, then munged if this test started it
            _stop(proc)
        if not had_cache and CONFIGLESS_CACHE.is_symlink():  # slurmd's link into the spool dir
            CONFIGLESS_CACHE.unlink()


def _start_snakemake(repo, workdir: Path, *args, env) -> subprocess.Popen:
    """Snakemake on the test profile's config in a scratch working directory, its output
    in ``<workdir>.out``, in a session of its own (see `_finish`)."""
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(repo / "Snakefile"),
           "--directory", str(workdir), "--configfile", str(repo / "config" / "test.yaml"), *args]
    with open(f"{workdir}.out", "w") as out:
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _finish(proc: subprocess.Popen, workdir: Path, deadline: float) -> tuple[int, str]:
    """Wait until the monotonic ``deadline``, then kill the whole process group: Snakemake
    waiting on a cluster it cannot query ignores SIGTERM."""
    try:
        proc.wait(timeout=max(deadline - time.monotonic(), 1))
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        pytest.fail(f"{' '.join(proc.args[2:])} ran too long and was killed:\n"
                    f"{_tail(Path(f'{workdir}.out').read_text(errors='replace'), 5000)}")
    return proc.returncode, Path(f"{workdir}.out").read_text(errors="replace")


def _outputs(workdir: Path) -> dict[str, bytes]:
    """The tables, claims and raw outputs of TARGETS, by path below the working directory."""
    files = {}
    for target in TARGETS:
        paths = [workdir / "results" / "tables" / f"{target}.csv",
                 workdir / "results" / "claims" / f"{target}.json",
                 *sorted((workdir / "results" / "raw" / target).rglob("*"))]
        for path in paths:
            if path.is_file():
                files[str(path.relative_to(workdir))] = path.read_bytes()
    return files


def test_the_slurm_profile_builds_two_targets_as_a_local_run_does(repo, slurm_cluster, tmp_path):
    # the user's two changes to profiles/slurm: account and partition
    text = (repo / "profiles" / "slurm" / "config.yaml").read_text()
    assert text.count('"<your-account>"') == 1 and text.count('"<your-partition>"') == 1
    profile = tmp_path / "profile"
    profile.mkdir()
    (profile / "config.yaml").write_text(
        text.replace('"<your-account>"', ACCOUNT).replace('"<your-partition>"', PARTITION))
    # jobs run on this machine as root with Snakemake's environment (sbatch --export=ALL)
    venv_bin = str(Path(sys.executable).parent)
    env = {**slurm_cluster["env"], "PATH": os.pathsep.join([venv_bin, SYSTEM_PATH])}
    on_slurm, local = tmp_path / "slurm", tmp_path / "local"
    deadline = time.monotonic() + 900
    # the reference, built meanwhile on this machine
    local_run = _start_snakemake(repo, local, "--cores", "2", *TARGETS,
                                 env={k: v for k, v in env.items() if k != "SLURM_CONF"})
    try:
        slurm_run = _start_snakemake(repo, on_slurm, "--workflow-profile", str(profile),
                                     "--slurm-status-command", "squeue",  # no accounting: no sacct
                                     "--slurm-init-seconds-before-status-checks", "2", *TARGETS,
                                     env=env)
        rc, out = _finish(slurm_run, on_slurm, deadline)
        # failed jobs' logs stay in .snakemake/slurm_logs (successful ones are deleted)
        logs = "\n".join(f"--- {p}:\n{_tail(p.read_text(errors='replace'), 1500)}"
                         for p in sorted((on_slurm / ".snakemake" / "slurm_logs").rglob("*.log")))
        assert rc == 0, _tail(out, 6000) + "\n" + _tail(logs, 6000)
        submitted = re.findall(r"submitted with SLURM jobid \d+ \(log: \S+/slurm_logs/rule_(\w+)/", out)
        assert sorted(submitted) == sorted(["run_experiment", "render_figure_notebook", "render_html"]
                                           * len(TARGETS)), _tail(out)
        rc, out = _finish(local_run, local, deadline)
        assert rc == 0, _tail(out, 6000)
    finally:
        if local_run.poll() is None:
            os.killpg(local_run.pid, signal.SIGKILL)
            local_run.wait()
    expected, got = _outputs(local), _outputs(on_slurm)
    assert expected and any("/raw/" in name for name in expected)
    assert got.keys() == expected.keys()
    differ = [name for name in expected if got[name] != expected[name]]
    assert not differ, differ
    for target in TARGETS:  # the rest of each target was built on the cluster too
        assert (on_slurm / "results" / "reports" / f"{target}.html").is_file()
        assert (on_slurm / "results" / "figures" / f"{target}.png").is_file()
