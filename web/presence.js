// Presence and deduplication, ported from the Swift layer's PresenceTracker, HeartbeatSchedule and
// MessageDeduplicator so the page shows the same members a Swift client does. Pure (time is passed in as `now`, in
// milliseconds): tested by web/test/presence.test.js without waiting.
//
// Live traffic is the truth, retained messages only a cache (a clustered broker does not share them between nodes).
// A user is present in a room when EITHER
//   - it was heard live there (its JOIN or a heartbeat) within 3 x the heartbeat interval it announced (the
//     default interval when it announced none), and no offline status (its will) for that session came since; OR
//   - its retained membership (a JoinEvent with a session id) is known, its status is ONLINE with the SAME session,
//     and that cached membership is younger than 3 default intervals (a fast first view on a single broker).
// The will (offline status, delivered live everywhere) drops the session from every room at once; heartbeats of that
// session still on their way are ignored for one timeout, unless the same session says ONLINE again (a reconnect).

/** Heartbeat intervals a member may miss before it is dropped. */
export const MISSED_HEARTBEATS = 3;
/** The longest announced interval believed (5 min): a heartbeat announcing days must not keep a ghost for days. */
export const LONGEST_INTERVAL_MS = 300_000;

export class PresenceTracker {
  /** defaultIntervalMs: assumed when a member announces no interval; null: nobody times out unless it announced one. */
  constructor(defaultIntervalMs = null) {
    this.defaultIntervalMs = defaultIntervalMs;
    this.cached = new Map(); // room -> Map(user -> {session, profile, expiresAt, stale})
    this.live = new Map(); // room -> Map(user -> {session, profile, expiresAt})
    this.statuses = new Map(); // user -> {online, session, profile}
    this.dead = new Map(); // user -> {session, until}: a session whose will arrived live
  }

  /** How long a member announcing `intervalMs` (0 or null: the default) may stay silent; null: forever. */
  timeout(intervalMs) {
    const interval = intervalMs || this.defaultIntervalMs;
    return interval ? Math.min(interval, LONGEST_INTERVAL_MS) * MISSED_HEARTBEATS : null;
  }

  deadline(now, intervalMs) {
    const timeout = this.timeout(intervalMs);
    return timeout === null ? null : now + timeout;
  }

  /** The members present in `room`, sorted by id: [{id, profile}]. */
  members(room) {
    return this.users(room).map((user) => this.presentMember(room, user)).filter(Boolean);
  }

  isPresent(user, room) { return this.presentMember(room, user) !== null; }

  /** Users whose status is ONLINE or who are heard live in a room (a clustered broker never replays the retained
   *  status of a user on another node), sorted by id: [{id, profile}]. */
  onlineUsers() {
    const online = new Map([...this.statuses.entries()].filter(([, s]) => s.online).map(([id, s]) => [id, s.profile]));
    for (const members of this.live.values()) for (const [id, heard] of members) online.set(id, heard.profile);
    return [...online.entries()].map(([id, profile]) => ({ id, profile })).sort((a, b) => compareIds(a.id, b.id));
  }

  rooms() { return [...new Set([...this.cached.keys(), ...this.live.keys()])].sort(compareIds); }

  /**
   * Applies one input (see inbound.js; plus {kind: "heard", room, user, session, profile, intervalMs}) received at
   * `now` and returns the changes: [{room, member, kind: "present" | "left" | "offline" | "timedOut"}]. `retained`:
   * the message was a retained copy the broker replayed, not live traffic.
   */
  apply(input, now = 0, retained = false) {
    const { room, user } = input;
    switch (input.kind) {
      case "membership": {
        const before = this.presentMember(room, user);
        mapIn(this.cached, room).set(user, {
          session: input.session, profile: input.profile, expiresAt: this.deadline(now, 0), stale: false,
        });
        return this.change(room, user, before, "offline");
      }
      case "membershipCleared": {
        const before = this.presentMember(room, user);
        this.cached.get(room)?.delete(user);
        this.live.get(room)?.delete(user);
        this.dropEmpty(room);
        return this.change(room, user, before, "left");
      }
      case "heard": {
        const muted = this.dead.get(user);
        if (muted && muted.session === input.session && (muted.until === null || now < muted.until)) return [];
        const before = this.presentMember(room, user);
        mapIn(this.live, room).set(user, {
          session: input.session, profile: input.profile, expiresAt: this.deadline(now, input.intervalMs),
        });
        return this.change(room, user, before, "offline");
      }
      case "status":
        return this.updateStatus(user, { online: input.online, session: input.session, profile: input.profile },
          now, retained);
      case "statusCleared":
        return this.updateStatus(user, null, now, retained);
      default:
        return [];
    }
  }

  /** Drops everyone not heard from in time as of `now`; returns the "timedOut" changes. */
  expire(now) {
    const changes = [];
    for (const room of this.rooms()) {
      for (const user of this.users(room)) {
        const before = this.presentMember(room, user);
        const heard = this.live.get(room)?.get(user);
        const cached = this.cached.get(room)?.get(user);
        if (heard && heard.expiresAt !== null && heard.expiresAt <= now) {
          this.live.get(room).delete(user);
          if (cached) cached.stale = true; // silent past its timeout: a retained copy must not bring it back
        }
        if (cached && cached.expiresAt !== null && cached.expiresAt <= now) cached.stale = true;
        changes.push(...this.change(room, user, before, "timedOut"));
      }
      this.dropEmpty(room);
    }
    for (const [user, muted] of this.dead) if (muted.until !== null && muted.until <= now) this.dead.delete(user);
    return changes;
  }

  /** Drops everything known about `room` (after leaving it); reports nothing. */
  forget(room) { this.cached.delete(room); this.live.delete(room); }

  updateStatus(user, status, now, retained) {
    const rooms = this.rooms().filter((room) => this.cached.get(room)?.has(user) || this.live.get(room)?.has(user));
    const before = rooms.map((room) => this.presentMember(room, user));
    if (status) this.statuses.set(user, status); else this.statuses.delete(user);
    if (status && !status.online) {
      for (const room of rooms) {
        if (this.live.get(room)?.get(user)?.session === status.session) this.live.get(room).delete(user);
      }
      if (!retained) this.dead.set(user, { session: status.session, until: this.deadline(now, 0) });
    } else if (status && !retained && this.dead.get(user)?.session === status.session) {
      this.dead.delete(user); // the same session reconnected and said so
    }
    return rooms.flatMap((room, i) => this.change(room, user, before[i], "offline"));
  }

  users(room) {
    return [...new Set([...(this.cached.get(room)?.keys() ?? []), ...(this.live.get(room)?.keys() ?? [])])]
      .sort(compareIds);
  }

  dropEmpty(room) {
    if (this.cached.get(room)?.size === 0) this.cached.delete(room);
    if (this.live.get(room)?.size === 0) this.live.delete(room);
  }

  presentMember(room, user) {
    const heard = this.live.get(room)?.get(user);
    if (heard) return { id: user, profile: heard.profile };
    const membership = this.cached.get(room)?.get(user);
    const status = this.statuses.get(user);
    if (!membership || membership.stale || !status || !status.online || status.session !== membership.session) {
      return null;
    }
    return { id: user, profile: membership.profile };
  }

  change(room, user, before, reason) {
    const after = this.presentMember(room, user);
    if (!before && after) return [{ room, member: after, kind: "present" }];
    if (before && !after) return [{ room, member: before, kind: reason }];
    return [];
  }
}

function mapIn(map, key) {
  if (!map.has(key)) map.set(key, new Map());
  return map.get(key);
}

/** Members per step of the heartbeat interval's multiplier, and its largest value (HeartbeatSchedule in Swift). */
export const MEMBERS_PER_STEP = 10;
export const MAX_MULTIPLIER = 20;

/** The multiple of the base interval a room of `memberCount` members heartbeats at: ceil(n / 10), 1 ... 20. */
export function heartbeatMultiplier(memberCount) {
  return Math.min(Math.max(1, Math.ceil(memberCount / MEMBERS_PER_STEP)), MAX_MULTIPLIER);
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
