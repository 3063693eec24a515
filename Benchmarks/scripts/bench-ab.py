#!/usr/bin/env python3
"""A/B runs of broker builds (and mosquitto) under one load, alternating, a fresh broker per run.

    Benchmarks/scripts/bench-ab.py [--reps N] [--gen BIN] [--args "BENCH ARGS"] BROKER...

BROKER is a path to an `mqttchat` binary, the word `mosquitto`, or a path to a `NIORelayFloor` or
`EpollRelayFloor` binary (the latency floor of a forwarder on SwiftNIO, or on an epoll loop of its own; pairs at
QoS 0 or 1 only; built by `swift build --package-path Benchmarks -c release --scratch-path .build-bench-release
--product NIORelayFloor`, in .build-bench-release/release/). Each repetition runs every broker once, in
turn, so slow spells of a shared host fall on all of them alike. Every broker is started for its run (pinned to
core 0, the generator to core 1, as in bench-broker.sh) and stopped after it.

Prints per broker: median and best delivered msg/s, median and best broker CPU per delivery, and for fixed-rate
runs (--rate in the bench args) the median p50 and p99 latency, and the median share of the wall time the broker was busy
(each run's line also splits its CPU into user and system time per delivery). Best-of-N is worth reading beside the median on
a noisy machine: interference only ever makes a run slower.

Bounded: every run has a timeout, every broker is killed at the end of its run.
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

CONF = """listener {port} 127.0.0.1
allow_anonymous true
max_inflight_messages 20
max_queued_messages 100000
sys_interval 0
log_dest stdout
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, limit=10.0):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def is_relay_floor(broker):
    """Whether `broker` is a `NIORelayFloor` or `EpollRelayFloor` binary: the latency floor of a forwarder with no
    broker logic, on SwiftNIO or on an epoll loop of its own (pairs at QoS 0 or 1 only; see
    Benchmarks/Sources/NIORelayFloor/main.swift and Benchmarks/Sources/EpollRelayFloor/main.swift)."""
    return os.path.basename(broker).startswith(("NIORelayFloor", "EpollRelayFloor"))


def start_broker(broker, tmp, extra_conf=""):
    port = free_port()
    conf = os.path.join(tmp, "broker.conf")
    with open(conf, "w") as f:
        f.write(CONF.format(port=port))
        f.write(extra_conf)
        if broker == "mosquitto":
            f.write("set_tcp_nodelay true\n")
    if broker == "mosquitto":
        cmd = [shutil.which("mosquitto") or "/usr/sbin/mosquitto", "-c", conf]
    elif is_relay_floor(broker):
        cmd = [broker, str(port)]  # no config: it takes its port, and forwards without limits
    else:
        cmd = [broker, "broker", "-c", conf]
    log = open(os.path.join(tmp, "broker.log"), "w")
    proc = subprocess.Popen(["taskset", "-c", "0"] + cmd, stdout=log, stderr=subprocess.STDOUT)
    if not wait_port(port, proc):
        proc.kill()
        raise RuntimeError(f"{broker} did not start")
    return proc, port


def stop(proc):
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def run(gen, broker, bench_args, tmp, extra_conf=""):
    proc, port = start_broker(broker, tmp, extra_conf)
    try:
        cmd = ["taskset", "-c", "1", gen, "bench", "--port", str(port), "--broker-pid", str(proc.pid),
               "--timeout", "30", "--drain", "3", "--json"] + bench_args.split()
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            raise RuntimeError(out.stderr.strip()[-300:])
        return json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        stop(proc)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--gen", help="mqttchat binary that runs the load (default: the first binary given)")
    parser.add_argument("--args", default="--scenario fanin --qos 2 --duration 3")
    parser.add_argument("--conf", action="append", default=[],
                        help="a config line added for every broker (repeatable), e.g. 'max_queued_messages 1000'")
    parser.add_argument("brokers", nargs="+")
    opts = parser.parse_args()
    gen = opts.gen or next((b for b in opts.brokers if b != "mosquitto" and not is_relay_floor(b)), None)
    if gen is None:
        sys.exit("bench-ab: give --gen when no broker is an mqttchat binary")
    results = {b: [] for b in opts.brokers}
    with tempfile.TemporaryDirectory(prefix="bench-ab.") as tmp:
        for rep in range(opts.reps):
            for broker in opts.brokers:
                try:
                    r = run(gen, broker, opts.args, tmp, "".join(line + "\n" for line in opts.conf))
                except (RuntimeError, subprocess.TimeoutExpired, ValueError) as error:
                    print(f"rep {rep + 1} {broker}: FAILED {error}", file=sys.stderr)
                    continue
                results[broker].append(r)
                usage = r.get("brokerUsage") or {}
                lat = r.get("latency") or {}
                delivered = max(r.get("delivered", 0), 1)
                print(f"rep {rep + 1} {os.path.basename(broker)}: {r['deliveredPerSecond']:.0f} msg/s "
                      f"cpu {usage.get('cpuMicrosPerDelivery', 0):.2f} us/msg "
                      f"(user {1e6 * usage.get('userSeconds', 0) / delivered:.2f} "
                      f"sys {1e6 * usage.get('systemSeconds', 0) / delivered:.2f}) "
                      f"busy {100 * usage.get('busyFraction', 0):.0f}% lost {r['lost']} dup {r['duplicates']}"
                      + (f" p50 {lat['p50Micros']:.1f} p99 {lat['p99Micros']:.1f}" if lat else ""),
                      file=sys.stderr)
    print(f"{'broker':<40} {'runs':>4} {'med msg/s':>10} {'best':>10} {'med cpu':>8} {'best cpu':>8} "
          f"{'med p50':>8} {'med p99':>8} {'med busy':>8}")
    for broker, rs in results.items():
        if not rs:
            print(f"{broker:<40} no runs")
            continue
        rates = [r["deliveredPerSecond"] for r in rs]
        cpus = [(r.get("brokerUsage") or {}).get("cpuMicrosPerDelivery") for r in rs]
        cpus = [c for c in cpus if c is not None]
        p50s = [r["latency"]["p50Micros"] for r in rs if r.get("latency")]
        p99s = [r["latency"]["p99Micros"] for r in rs if r.get("latency")]
        busy = [100 * (r.get("brokerUsage") or {}).get("busyFraction", 0) for r in rs if r.get("brokerUsage")]

        def fmt(values, pick):
            return f"{pick(values):.2f}" if values else "-"

        print(f"{broker[-40:]:<40} {len(rs):>4} {statistics.median(rates):>10.0f} {max(rates):>10.0f} "
              f"{fmt(cpus, statistics.median):>8} {fmt(cpus, min):>8} {fmt(p50s, statistics.median):>8} "
              f"{fmt(p99s, statistics.median):>8} {fmt(busy, statistics.median):>8}")


if __name__ == "__main__":
    main()
