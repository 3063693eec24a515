// The page's presence rules are the Swift PresenceTracker's (Tests/MQTTChatTests/PresenceTrackerTests.swift):
// membership AND status online with the same session id.
import assert from "node:assert/strict";
import { test } from "node:test";

import { MessageDeduplicator, PresenceTracker } from "../presence.js";

const profile = (name) => ({ name, level: 0, iconUrl: "" });
const membership = (room, user, session) => ({ kind: "membership", room, user, session, profile: profile(user) });
const status = (user, online, session) => ({ kind: "status", user, online, session, profile: profile(user) });

test("present only with a membership and an online status of the same session, in any order", () => {
  const t = new PresenceTracker();
  assert.deepEqual(t.apply(membership("lobby", "bob", "s1")), []);
  const [change] = t.apply(status("bob", true, "s1"));
  assert.equal(change.kind, "present");
  assert.equal(change.member.id, "bob");
  assert.deepEqual(t.members("lobby").map((m) => m.id), ["bob"]);

  const u = new PresenceTracker();
  u.apply(status("bob", true, "s1"));
  assert.equal(u.apply(membership("lobby", "bob", "s1"))[0].kind, "present");
});

test("a stale membership of an older session does not count", () => {
  const t = new PresenceTracker();
  t.apply(membership("lobby", "bob", "old"));
  assert.deepEqual(t.apply(status("bob", true, "new")), []);
  assert.deepEqual(t.members("lobby"), []);
  assert.deepEqual(t.onlineUsers().map((m) => m.id), ["bob"]);
});

test("the will (offline status) removes the user from every room at once; a cleared membership is 'left'", () => {
  const t = new PresenceTracker();
  for (const room of ["a", "b"]) t.apply(membership(room, "bob", "s"));
  t.apply(status("bob", true, "s"));
  const changes = t.apply(status("bob", false, "s"));
  assert.deepEqual(changes.map((c) => [c.room, c.kind]), [["a", "offline"], ["b", "offline"]]);
  t.apply(status("bob", true, "s"));
  assert.deepEqual(t.apply({ kind: "membershipCleared", room: "a", user: "bob" }).map((c) => c.kind), ["left"]);
  assert.deepEqual(t.apply({ kind: "statusCleared", user: "bob" }).map((c) => [c.room, c.kind]), [["b", "offline"]]);
});

test("members are sorted by id; forget drops a room silently", () => {
  const t = new PresenceTracker();
  for (const user of ["carol", "alice", "bob"]) { t.apply(membership("r", user, user)); t.apply(status(user, true, user)); }
  assert.deepEqual(t.members("r").map((m) => m.id), ["alice", "bob", "carol"]);
  t.forget("r");
  assert.deepEqual(t.members("r"), []);
});

test("the deduplicator reports a copy once, and forgets the oldest beyond its capacity", () => {
  const d = new MessageDeduplicator(2);
  assert.equal(d.markSeen("a"), true);
  assert.equal(d.markSeen("a"), false);
  d.markSeen("b");
  d.markSeen("a"); // refreshed: b is now the oldest
  d.markSeen("c");
  assert.equal(d.markSeen("a"), false);
  assert.equal(d.markSeen("b"), true);
});
