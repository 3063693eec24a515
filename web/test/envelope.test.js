// The JS codec against the Swift layer's bytes (golden.json, written and kept current by
// Tests/MQTTChatTests/WebGoldenEnvelopeTests.swift) and against protoc's own decoder.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import {
  bodyCase, decodeEnvelope, DecodeError, encodeEnvelope, fromHex, MessageType, toHex, toProto3Json,
} from "../envelope.js";

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, "..", "..");
const golden = JSON.parse(readFileSync(join(here, "golden.json"), "utf8")).envelopes;

test("the fixture covers every message type and the edge cases", () => {
  const names = golden.map((g) => g.name);
  for (const name of ["join", "leave", "text", "gift", "direct", "status_online", "status_offline", "heartbeat_max",
    "negative_numbers", "max_int64_unknown_type", "unknown_fields"]) {
    assert.ok(names.includes(name), `golden.json lacks ${name}`);
  }
});

for (const fixture of golden) {
  test(`golden ${fixture.name}: decodes to what swift-protobuf says and encodes to its exact bytes`, () => {
    const decoded = decodeEnvelope(fromHex(fixture.hex));
    assert.deepEqual(toProto3Json(decoded), fixture.json);
    assert.equal(toHex(encodeEnvelope(decoded)), fixture.canonicalHex ?? fixture.hex);
  });
}

test("64-bit fields keep every bit (BigInt) and unknown enum values are kept as numbers", () => {
  const far = decodeEnvelope(fromHex(golden.find((g) => g.name === "max_int64_unknown_type").hex));
  assert.equal(far.sentAtMs, 9223372036854775807n);
  assert.equal(far.type, 42);
  const hb = decodeEnvelope(fromHex(golden.find((g) => g.name === "heartbeat_max").hex));
  assert.equal(hb.heartbeat.sequence, 18446744073709551615n);
  const neg = decodeEnvelope(fromHex(golden.find((g) => g.name === "negative_numbers").hex));
  assert.equal(neg.sentAtMs, -1n);
  assert.equal(neg.gift.user.level, -1);
  assert.equal(neg.gift.giftCount, -2);
  const odd = decodeEnvelope(fromHex(golden.find((g) => g.name === "unknown_status_state").hex));
  assert.equal(odd.status.state, 7);
});

test("unknown fields of every wire type are skipped, at the top level and inside the body", () => {
  const fixture = golden.find((g) => g.name === "unknown_fields");
  assert.ok(fixture.hex.length > fixture.canonicalHex.length);
  const decoded = decodeEnvelope(fromHex(fixture.hex));
  assert.equal(decoded.text.text, "from the future");
  assert.equal(bodyCase(decoded), "text");
  // A known field sent with another wire type is skipped like an unknown one (protobuf's rule).
  const odd = decodeEnvelope(Uint8Array.from([0x0d, 1, 2, 3, 4, 0x12, 0x01, 0x62])); // 1: fixed32, 2: "b"
  assert.equal(odd.messageId, "");
  assert.equal(odd.senderId, "b");
});

test("defaults are omitted on encode, a present empty body is not", () => {
  assert.equal(toHex(encodeEnvelope({ messageId: "", room: "", sentAtMs: 0n, type: MessageType.JOIN })), "");
  assert.equal(toHex(encodeEnvelope({ type: MessageType.HEARTBEAT, heartbeat: {} })), "28089201" + "00");
  assert.equal(toHex(encodeEnvelope({ sentAtMs: 1 })), "2001"); // a safe Number is accepted for int64
});

test("the oneof body: the last member on the wire wins; encoding two is refused", () => {
  const both = Uint8Array.from([0x62, 0x02, 0x12, 0x00, 0x6a, 0x00]); // text {text: ""}, then gift {}
  assert.equal(bodyCase(decodeEnvelope(both)), "gift");
  assert.equal(decodeEnvelope(both).text, undefined);
  assert.throws(() => encodeEnvelope({ text: {}, gift: {} }), TypeError);
});

test("malformed input is rejected with DecodeError", () => {
  for (const hex of ["0a05616263", "0a", "80", "ffffffffffffffffffffff01", "0b", "0c", "12028080", "07"]) {
    assert.throws(() => decodeEnvelope(fromHex(hex)), DecodeError, hex);
  }
});

/** protoc's view of some bytes: `protoc --decode_raw` (schema-less) or `--decode=TYPE` with chat.proto. */
function protoc(bytes, args) {
  const r = spawnSync("protoc", args, { input: Buffer.from(bytes), cwd: repo, encoding: "utf8" });
  if (r.error?.code === "ENOENT") assert.fail("protoc is not installed: scripts/setup.sh installs protobuf-compiler");
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

test("protoc --decode_raw reads what the JS codec writes, field by field", () => {
  const envelope = {
    messageId: "m-1", senderId: "alice", room: "lobby", sentAtMs: 1700000000123n, type: MessageType.GIFT,
    gift: { user: { level: 3, name: "Alice" }, giftName: "rose", giftCount: 2 },
  };
  assert.equal(protoc(encodeEnvelope(envelope), ["--decode_raw"]), [
    '1: "m-1"', '2: "alice"', '3: "lobby"', "4: 1700000000123", "5: 3", "13 {", "  1 {", "    1: 3",
    '    2: "Alice"', "  }", '  2: "rose"', "  4: 2", "}", "",
  ].join("\n"));
});

test("protoc --decode with chat.proto reads the JS bytes as the same envelope", () => {
  const args = ["--proto_path=Sources/MQTTChat/Proto", "--decode=mqttchat.v1.Envelope", "chat.proto"];
  const bytes = encodeEnvelope({
    messageId: "m-2", senderId: "bob", sentAtMs: -5n, type: MessageType.STATUS,
    status: { state: 1, user: { name: "Bob", level: -7 }, sessionId: "S" },
  });
  assert.equal(protoc(bytes, args), [
    'message_id: "m-2"', 'sender_id: "bob"', "sent_at_ms: -5", "type: STATUS", "status {", "  state: ONLINE",
    "  user {", "    level: -7", '    name: "Bob"', "  }", '  session_id: "S"', "}", "",
  ].join("\n"));
});
