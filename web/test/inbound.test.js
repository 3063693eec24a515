// Topic checks as in the Swift ChatInboundInterpreter: an envelope must agree with the topic it came on.
import assert from "node:assert/strict";
import { test } from "node:test";

import { encodeEnvelope } from "../envelope.js";
import { interpret, InboundError, nameProblem, parseTopic, topics } from "../inbound.js";
import { EnvelopeFactory } from "../outbound.js";

const alice = new EnvelopeFactory("alice", { name: "Alice" }, "S1");
const bytes = (envelope) => encodeEnvelope(envelope);

test("names: 1...64 UTF-8 bytes, no + # / or U+0000", () => {
  assert.equal(nameProblem("lobby"), null);
  assert.equal(nameProblem("é".repeat(32)), null);
  for (const bad of ["", "a+b", "a#", "a/b", "a\u0000", "é".repeat(33)]) assert.notEqual(nameProblem(bad), null, bad);
});

test("topics are built and parsed as TOPICS.md says", () => {
  assert.equal(topics.roomMember("lobby", "bob"), "mqttchat/rooms/lobby/members/bob");
  assert.deepEqual(parseTopic("mqttchat/users/bob/inbox"), { kind: "inbox", user: "bob" });
  assert.deepEqual(parseTopic("mqttchat/rooms/r/messages"), { kind: "roomMessages", room: "r" });
  assert.equal(parseTopic("mqttchat/rooms/r/other"), null);
  assert.equal(parseTopic("other/users/bob/status"), null);
});

test("memberships, statuses and their clearing become presence inputs", () => {
  const m = interpret(topics.roomMember("lobby", "alice"), bytes(alice.join("lobby")), "me");
  assert.deepEqual(m.input, { kind: "membership", room: "lobby", user: "alice", session: "S1",
    profile: { name: "Alice", level: 0, iconUrl: "" } });
  const s = interpret(topics.status("alice"), bytes(alice.status(false)), "me");
  assert.equal(s.input.online, false);
  assert.deepEqual(interpret(topics.status("alice"), new Uint8Array(), "me").input, { kind: "statusCleared", user: "alice" });
  assert.equal(interpret(topics.roomMember("lobby", "x"), new Uint8Array(), "me").input.kind, "membershipCleared");
});

test("messages: text, gift and direct become records; own ones are 'sent'", () => {
  const text = interpret(topics.roomMessages("lobby"), bytes(alice.text("<b>hi</b>", "lobby")), "bob").record;
  assert.deepEqual([text.content.text, text.direction, text.conversation.room], ["<b>hi</b>", "received", "lobby"]);
  const gift = interpret(topics.roomMessages("lobby"), bytes(alice.gift({ name: "rose", count: 3 }, "lobby")), "alice");
  assert.deepEqual([gift.record.content.gift, gift.record.direction], [{ name: "rose", count: 3, url: "" }, "sent"]);
  const dm = interpret(topics.inbox("bob"), bytes(alice.direct("psst", "bob")), "bob").record;
  assert.deepEqual([dm.conversation.peer, dm.content.text], ["alice", "psst"]);
});

test("an envelope that disagrees with its topic, or is not one, is refused", () => {
  const refused = [
    [topics.roomMember("lobby", "mallory"), alice.join("lobby")], // someone else's member topic
    [topics.roomMember("other", "alice"), alice.join("lobby")], // another room
    [topics.status("bob"), alice.status(true)], // marking bob online
    [topics.inbox("carol"), alice.direct("x", "bob")], // recipient is not the inbox owner
    [topics.roomMessages("other"), alice.text("x", "lobby")], // a line of another room
    [topics.roomMessages("lobby"), alice.status(true)], // status in a room
    [topics.roomMessages("lobby"), new EnvelopeFactory("a/b", {}, "s").text("x", "lobby")], // invalid sender
  ];
  for (const [topic, envelope] of refused) assert.throws(() => interpret(topic, bytes(envelope), "me"), InboundError, topic);
  assert.throws(() => interpret(topics.roomMessages("lobby"), Uint8Array.from([0x0a]), "me"), InboundError);
  assert.throws(() => interpret("elsewhere/x", Uint8Array.from([]), "me"), InboundError);
});
