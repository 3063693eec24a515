// Presence and deduplication, ported from the Swift layer's PresenceTracker and MessageDeduplicator so the page
// shows the same members a Swift client does. Pure: tested by web/test/presence.test.js.
//
// A user is present in a room when BOTH hold:
//   - its retained membership (mqttchat/rooms/<room>/members/<user>, a JoinEvent with a session id) exists, and
//   - its retained status (mqttchat/users/<user>/status) is ONLINE with the SAME session id.
// The MQTT will can publish one message only, so a killed client flips its one status topic to OFFLINE and
// disappears from every room at once; the session id makes memberships left behind by a killed process count
// for nothing when the same user id connects again. Inputs may arrive in any order.

export class PresenceTracker {
  constructor() {
    this.memberships = new Map(); // room -> Map(user -> {session, profile})
    this.statuses = new Map(); // user -> {online, session, profile}
  }

  /** The members present in `room`, sorted by id: [{id, profile}]. */
  members(room) {
    const users = [...(this.memberships.get(room)?.keys() ?? [])].sort(compareIds);
    return users.map((user) => this.presentMember(room, user)).filter(Boolean);
  }

  isPresent(user, room) { return this.presentMember(room, user) !== null; }

  /** Users whose status is ONLINE (whatever their rooms), sorted by id: [{id, profile}]. */
  onlineUsers() {
    return [...this.statuses.entries()].filter(([, s]) => s.online).map(([id, s]) => ({ id, profile: s.profile }))
      .sort((a, b) => compareIds(a.id, b.id));
  }

  /**
   * Applies one input (see inbound.js) and returns the changes: [{room, member, kind: "present" | "left" |
   * "offline"}]; "left" when the membership was cleared, "offline" when the status went away or its session differs.
   */
  apply(input) {
    switch (input.kind) {
      case "membership": {
        const before = this.presentMember(input.room, input.user);
        if (!this.memberships.has(input.room)) this.memberships.set(input.room, new Map());
        this.memberships.get(input.room).set(input.user, { session: input.session, profile: input.profile });
        return this.change(input.room, input.user, before, "offline");
      }
      case "membershipCleared": {
        const before = this.presentMember(input.room, input.user);
        const members = this.memberships.get(input.room);
        members?.delete(input.user);
        if (members?.size === 0) this.memberships.delete(input.room);
        return this.change(input.room, input.user, before, "left");
      }
      case "status":
        return this.updateStatus(input.user, { online: input.online, session: input.session, profile: input.profile });
      case "statusCleared":
        return this.updateStatus(input.user, null);
      default:
        return [];
    }
  }

  /** Drops everything known about `room` (after leaving it); reports nothing. */
  forget(room) { this.memberships.delete(room); }

  updateStatus(user, status) {
    const rooms = [...this.memberships.entries()].filter(([, m]) => m.has(user)).map(([room]) => room).sort(compareIds);
    const before = rooms.map((room) => this.presentMember(room, user));
    if (status) this.statuses.set(user, status); else this.statuses.delete(user);
    return rooms.flatMap((room, i) => this.change(room, user, before[i], "offline"));
  }

  presentMember(room, user) {
    const membership = this.memberships.get(room)?.get(user);
    const status = this.statuses.get(user);
    if (!membership || !status || !status.online || status.session !== membership.session) return null;
    return { id: user, profile: membership.profile };
  }

  change(room, user, before, reason) {
    const after = this.presentMember(room, user);
    if (!before && after) return [{ room, member: after, kind: "present" }];
    if (before && !after) return [{ room, member: before, kind: reason }];
    return [];
  }
}

/** Ids in code-point order: the same as the Swift tracker's String order for ASCII ids (Swift compares
 *  Unicode-normalised text, so exotic ids may sort differently; only the display order can differ). */
function compareIds(a, b) {
  const x = [...a].map((c) => c.codePointAt(0));
  const y = [...b].map((c) => c.codePointAt(0));
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}

/**
 * Remembers the last `capacity` message ids (a bounded LRU, like the Swift MessageDeduplicator), so that a QoS 1
 * copy redelivered after a reconnect is shown once.
 */
export class MessageDeduplicator {
  constructor(capacity = 4096) { this.capacity = capacity; this.seen = new Map(); }

  /** True the first time `id` is seen (the message should be handled), false for a copy. */
  markSeen(id) {
    if (this.seen.has(id)) {
      this.seen.delete(id); // refresh: a Map iterates in insertion order, so the oldest is first
      this.seen.set(id, true);
      return false;
    }
    this.seen.set(id, true);
    if (this.seen.size > this.capacity) this.seen.delete(this.seen.keys().next().value);
    return true;
  }
}
