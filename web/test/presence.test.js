// The page's presence rules are the Swift PresenceTracker's (Tests/MQTTChatTests/PresenceTrackerTests.swift and
// PresenceTimeoutTests.swift): heard live, or a retained membership AND status online with the same session id, until
// the timeout. Time is passed in, so nothing here waits.
import assert from "node:assert/strict";
import { test } from "node:test";

import { heartbeatMultiplier, MessageDeduplicator, PresenceTracker } from "../presence.js";

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

const heard = (room, user, session, intervalMs = 3000) =>
  ({ kind: "heard", room, user, session, profile: profile(user), intervalMs });

test("a heartbeat alone makes a member present; 3 missed intervals drop it as timedOut", () => {
  const t = new PresenceTracker(3000);
  assert.deepEqual(t.apply(heard("lobby", "bob", "s"), 0).map((c) => c.kind), ["present"]);
  for (let ms = 3000; ms <= 30_000; ms += 3000) {
    t.apply(heard("lobby", "bob", "s"), ms);
    assert.deepEqual(t.expire(ms + 500), []);
  }
  assert.deepEqual(t.expire(38_999), []);
  assert.deepEqual(t.expire(39_000).map((c) => [c.member.id, c.kind]), [["bob", "timedOut"]]);
  // Announced intervals win over the default; 0 means "use the default".
  t.apply(heard("lobby", "carol", "c", 10_000), 40_000);
  t.apply(heard("lobby", "dave", "d", 0), 40_000);
  assert.deepEqual(t.expire(49_000).map((c) => c.member.id), ["dave"]);
  assert.deepEqual(t.expire(70_000).map((c) => c.member.id), ["carol"]);
  t.apply(heard("lobby", "erin", "e", 0xffffffff), 100_000); // absurd: capped at 3 x 5 min
  assert.deepEqual(t.expire(100_000 + 900_000).map((c) => c.member.id), ["erin"]);
});

test("the will drops a heard member at once; its late heartbeats are ignored until it is online again", () => {
  const t = new PresenceTracker(3000);
  t.apply(heard("a", "bob", "s"), 0);
  t.apply(heard("b", "bob", "s"), 0);
  assert.deepEqual(t.apply(status("bob", false, "s"), 100).map((c) => [c.room, c.kind]), [["a", "offline"], ["b", "offline"]]);
  assert.deepEqual(t.apply(heard("a", "bob", "s"), 200), []);
  t.apply(status("bob", true, "s"), 300);
  assert.deepEqual(t.apply(heard("a", "bob", "s"), 400).map((c) => c.kind), ["present"]);
  // A will of an older session changes nothing; a replayed (retained) offline status mutes nothing.
  assert.deepEqual(t.apply(status("bob", false, "old"), 500), []);
  const u = new PresenceTracker(3000);
  u.apply(status("bob", false, "s"), 0, true);
  assert.deepEqual(u.apply(heard("a", "bob", "s"), 1).map((c) => c.kind), ["present"]);
});

test("a user heard live counts as online without any status", () => {
  const t = new PresenceTracker(3000);
  t.apply(heard("lobby", "bob", "s"), 0);
  t.apply(status("carol", true, "c"), 0);
  assert.deepEqual(t.onlineUsers().map((u) => u.id), ["bob", "carol"]);
});

test("a member known only from the retained cache is dropped when not heard within the timeout", () => {
  const t = new PresenceTracker(3000);
  t.apply(status("bob", true, "s"), 0, true);
  assert.deepEqual(t.apply(membership("lobby", "bob", "s"), 0).map((c) => c.kind), ["present"]);
  assert.deepEqual(t.expire(8999), []);
  assert.deepEqual(t.expire(9000).map((c) => c.kind), ["timedOut"]);
  assert.deepEqual(t.apply(status("bob", true, "s"), 9100), []); // the stale copy does not count again
  assert.deepEqual(t.apply(heard("lobby", "bob", "s"), 9200).map((c) => c.kind), ["present"]);
});

test("the heartbeat interval grows by one base interval per 10 members, up to 20 times", () => {
  assert.deepEqual([0, 1, 10, 11, 25, 100, 10_000].map(heartbeatMultiplier), [1, 1, 1, 2, 3, 10, 20]);
});
