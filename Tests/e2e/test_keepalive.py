"""Keep alive: MQTT 3.1.1 sections 3.1.2.10 and 3.12/3.13."""

import time

import mqtt_raw as raw

# mosquitto 2.0.11 scans for expired keepalives only every 5 s (whole-second clock), so a silent
# client is closed between 1.5 x keepalive and 1.5 x keepalive + ~6 s there (bound below: +7 s).
MOSQUITTO_SCAN_SLACK = 7.0


def test_silent_client_disconnected_after_keepalive(broker, raw_factory):
    # MQTT-3.1.2-24: no packet within 1.5 x keepalive -> the server disconnects. Not before 1 x.
    c = raw_factory(broker)
    c.connect_ok("ka-silent", keepalive=1)
    start = time.monotonic()
    assert not c.closed_within(0.9), "closed before one keepalive period"
    assert c.closed_within(1.5 + MOSQUITTO_SCAN_SLACK - 0.9), "never disconnected"
    assert time.monotonic() - start >= 1.0


def test_silent_client_disconnected_promptly(broker, raw_factory, departure):
    # MQTT-3.1.2-24: no packet "within one and a half times the Keep Alive time period" -> the server
    # MUST disconnect. Allowed here: [1 x keepalive, 1.5 x keepalive + 1.1 s] for two clients (KA 1 s)
    # connected one after the other; their windows are disjoint and both lie within 5 s, so a broker
    # that only scans every 5 s cannot meet both, whatever its scan phase.
    departure("mosquitto", "mosquitto 2.0.11 checks keepalives only every 5 seconds, so a silent "
              "client is disconnected up to ~5 s after 1.5 x keepalive (MQTT-3.1.2-24, section 3.1.2.10)")
    for name in ("ka-prompt-a", "ka-prompt-b"):
        c = raw_factory(broker)
        c.connect_ok(name, keepalive=1)
        start = time.monotonic()
        assert not c.closed_within(1.0), f"{name}: closed before one keepalive period"
        assert c.closed_within(1.6), f"{name}: not disconnected within 1.5 x keepalive + 1.1 s"
        time.sleep(max(0.0, 2.7 - (time.monotonic() - start)))


def test_pingreq_keeps_connection_alive(broker, raw_factory):
    # 3.1.2.10 / MQTT-3.12.4-1: a client that sends PINGREQ within the keepalive stays connected past
    # 1.5 x keepalive, and each PINGREQ gets a PINGRESP.
    c = raw_factory(broker)
    c.connect_ok("ka-ping", keepalive=1)
    start = time.monotonic()
    while time.monotonic() - start < 3.5:
        time.sleep(0.5)
        c.send(raw.PINGREQ_BYTES)
        assert c.expect(raw.PINGRESP, timeout=2).raw == bytes([0xD0, 0x00])
    # Any control packet counts, not just PINGREQ.
    c.publish_qos1("ka/any", b"x", pid=3)


def test_keepalive_zero_means_no_timeout(broker, raw_factory):
    # 3.1.2.10: keepalive 0 turns the mechanism off.
    c = raw_factory(broker)
    c.connect_ok("ka-zero", keepalive=0)
    assert not c.closed_within(2.5)
    c.send(raw.PINGREQ_BYTES)
    c.expect(raw.PINGRESP)
