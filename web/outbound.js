// The envelopes one user publishes: a port of the Swift layer's ChatEnvelopeFactory, so the page writes the same
// fields a Swift client does (a fresh message id, the sender, the time, the type and the body with the profile).

import { MessageType, StatusState } from "./envelope.js";

/** A random UUID string, uppercase like Swift's UUID().uuidString (crypto.randomUUID needs a secure context). */
export function newID() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40; // version 4
  b[8] = (b[8] & 0x3f) | 0x80; // RFC 4122 variant
  const h = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("").toUpperCase();
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

export class EnvelopeFactory {
  /** sender: the user id; profile: {name, level, iconUrl}; session: this connection's session id. */
  constructor(sender, profile, session, now = () => Date.now(), makeID = newID) {
    Object.assign(this, { sender, profile, session, now, makeID });
  }

  join(room) { return this.envelope(MessageType.JOIN, room, { join: { user: this.user(), sessionId: this.session } }); }
  leave(room) { return this.envelope(MessageType.LEAVE, room, { leave: { user: this.user() } }); }
  text(text, room) { return this.envelope(MessageType.TEXT, room, { text: { user: this.user(), text } }); }

  gift({ name, count = 1, url = "" }, room) {
    const gift = { user: this.user(), giftName: name, giftUrl: url, giftCount: count };
    return this.envelope(MessageType.GIFT, room, { gift });
  }

  direct(text, recipient) {
    return this.envelope(MessageType.DIRECT, "", { direct: { user: this.user(), text, recipient } });
  }

  status(online) {
    const status = { state: online ? StatusState.ONLINE : StatusState.OFFLINE, user: this.user(), sessionId: this.session };
    return this.envelope(MessageType.STATUS, "", { status });
  }

  /** "I am here" in `room`, with the session and profile, announcing the next one in `intervalMs` (0: unknown). */
  heartbeat(sequence, room, intervalMs = 0) {
    const heartbeat = { sequence, sessionId: this.session, user: this.user(), intervalMs };
    return this.envelope(MessageType.HEARTBEAT, room, { heartbeat });
  }

  user() { return { level: this.profile.level ?? 0, name: this.profile.name ?? "", iconUrl: this.profile.iconUrl ?? "" }; }

  envelope(type, room, body) {
    return { messageId: this.makeID(), senderId: this.sender, room, sentAtMs: BigInt(Math.round(this.now())), type, ...body };
  }
}
