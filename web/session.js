// One browser chat user on an MQTT broker over WebSockets: the page's counterpart of the Swift ChatClient
// (Sources/MQTTChat/Client/ChatClient.swift). No DOM here: chat.js shows what this reports through `onEvent`.
//
// Wire behaviour kept identical to the Swift layer (TOPICS.md):
//   - client id = user id; will = the user's retained OFFLINE status (QoS 1), registered at every connect;
//   - after CONNACK: subscribe mqttchat/users/+/status and the own inbox (QoS 1), then publish ONLINE (retained);
//   - join: subscribe the room's messages (QoS 2) and members/+ (QoS 1), publish the retained JoinEvent on the own
//     member topic, then announce the JOIN in the room; leave: LEAVE, clear the retained membership, unsubscribe;
//   - text and direct QoS 1, gift QoS 2; own message ids are marked seen, and every received message is dropped when
//     its id was seen already (a QoS 1 copy redelivered after a reconnect);
//   - presence by heartbeat (TOPICS.md): a heartbeat (QoS 0, with session, profile and interval) in the room every
//     3 s, times ceil(members / 10) in big rooms; every other member's JOIN asks "who is here?" and is answered by a
//     heartbeat in the room after a random delay of up to half an interval (this page speaks 3.1.1, so it has no
//     Response Topic to answer on); members not heard for 3 of their intervals are dropped, a will drops at once;
//   - quit: OFFLINE status, memberships cleared, DISCONNECT (so the broker does not publish the will).
// Reconnects are ours, not mqtt.js's (its reconnectPeriod is 0): 1, 2, 4 ... 64 s between attempts, back to 1 s
// after a success, none after the user quit or the broker refused the credentials (then a login is needed).
// A reconnect keeps the session id, so memberships made before the drop count again once ONLINE is republished,
// and a heartbeat right away tells the room we are back.

import { encodeEnvelope } from "./envelope.js";
import { interpret, InboundError, topics } from "./inbound.js";
import { EnvelopeFactory, newID } from "./outbound.js";
import { heartbeatMultiplier, MessageDeduplicator, PresenceTracker } from "./presence.js";

/** The base heartbeat interval (ChatClientConfiguration.heartbeatInterval): a silent member is dropped after ~9 s. */
export const HEARTBEAT_MS = 3_000;
export const MAX_BACKOFF_S = 64;
/** CONNACK return codes that mean "log in (again)": 4 bad user name or password, 5 not authorised. */
export const AUTH_REFUSED = new Set([4, 5]);

/** Seconds to wait before reconnect attempt number `attempt` (0-based): 1, 2, 4 ... 64, 64, ... */
export function backoffSeconds(attempt) {
  return Math.min(MAX_BACKOFF_S, 2 ** Math.min(attempt, 6));
}

export class ChatSession {
  /**
   * mqtt: the mqtt.js module; url: ws(s)://host/mqtt; userId: validated; profile: {name, level, iconUrl};
   * onEvent(event): {type: "connection", state: "connecting" | "connected" | "reconnecting" | "closed", delay?, error?}
   *   | {type: "auth", code} | {type: "message", record} | {type: "presence", change} | {type: "members"}
   *   | {type: "error", message}.
   */
  constructor({
    mqtt, url, userId, profile, username, password, onEvent, timers = globalThis, heartbeatMs = HEARTBEAT_MS,
    now = () => Date.now(), random = Math.random,
  }) {
    Object.assign(this, { mqtt, url, userId, profile, username, password, onEvent, timers, heartbeatMs, now, random });
    this.session = newID();
    this.envelopes = new EnvelopeFactory(userId, profile, this.session);
    this.tracker = new PresenceTracker(heartbeatMs);
    this.dedup = new MessageDeduplicator();
    this.room = null; // the one joined room (the page shows one room at a time)
    this.client = null;
    this.connected = false;
    this.attempt = 0;
    this.everConnected = false;
    this.stopped = false; // the user quit: never reconnect
    this.reconnectTimer = null;
    this.heartbeatTimer = null;
    this.sweepTimer = null;
    this.answerTimer = null; // the pending answer to a "who is here?"
    this.heartbeatSequence = 0n;
    this.tick = 0;
    this.sent = null; // {tick, multiplier} of the last heartbeat in the room
  }

  // ------------------------------------------------------------------------------------------ connection

  /** Connects (again); `room` is joined once connected. */
  start(room = this.room) {
    this.pendingRoom = room;
    this.stopped = false;
    this.openClient();
  }

  openClient() {
    this.timers.clearTimeout(this.reconnectTimer);
    this.reconnectTimer = null;
    this.dropClient();
    this.onEvent({ type: "connection", state: this.everConnected ? "reconnecting" : "connecting" });
    const will = {
      topic: topics.status(this.userId), payload: encodeEnvelope(this.envelopes.status(false)), qos: 1, retain: true,
    };
    const client = this.mqtt.connect(this.url, {
      clientId: this.userId, protocolVersion: 4, clean: true, keepalive: 30, connectTimeout: 10_000,
      reconnectPeriod: 0, // our code drives reconnects (backoff above), never mqtt.js
      resubscribe: false, will, username: this.username, password: this.password,
    });
    this.client = client;
    let refused = null;
    client.on("connect", () => { if (this.client === client) this.didConnect(); });
    client.on("message", (topic, payload, packet) => {
      if (this.client === client) this.handle(topic, payload, packet?.retain === true);
    });
    client.on("error", (error) => {
      if (this.client !== client) return;
      if (AUTH_REFUSED.has(error.code)) refused = error.code;
      // Failed attempts are told by the "reconnecting" events; report only what goes wrong on a live connection.
      else if (this.connected) this.onEvent({ type: "error", message: error.message });
    });
    client.on("close", () => { if (this.client === client) this.didClose(refused); });
  }

  dropClient() {
    if (!this.client) return;
    const old = this.client;
    this.client = null;
    old.end(true); // no DISCONNECT: a dead connection; the broker's will speaks for it
  }

  async didConnect() {
    this.connected = true;
    this.attempt = 0;
    const again = this.everConnected;
    this.everConnected = true;
    try {
      await this.subscribe({ [topics.allStatusesFilter]: { qos: 1 }, [topics.inbox(this.userId)]: { qos: 1 } });
      await this.publishStatus(true);
      const room = this.room ?? this.pendingRoom;
      this.room = null;
      if (room) await this.join(room, { announce: !again });
      this.pendingRoom = null;
      if (again && this.room) this.sendHeartbeat(); // back: tell the room now rather than at the next tick
    } catch (error) {
      this.onEvent({ type: "error", message: `after connecting: ${error.message}` });
    }
    this.startHeartbeats();
    this.onEvent({ type: "connection", state: "connected", again });
  }

  didClose(refused) {
    const wasConnected = this.connected;
    this.connected = false;
    this.stopHeartbeats();
    this.dropClient();
    if (this.stopped) return;
    if (refused !== null) {
      // Retrying the same credentials cannot help: ask the user (chat.js shows the login form).
      this.stopped = true;
      this.onEvent({ type: "auth", code: refused });
      return;
    }
    if (!this.everConnected && !wasConnected && this.attempt === 0) {
      this.onEvent({ type: "error", message: `cannot reach ${this.url}` });
    }
    const delay = backoffSeconds(this.attempt);
    this.attempt += 1;
    this.onEvent({ type: "connection", state: "reconnecting", delay });
    this.reconnectTimer = this.timers.setTimeout(() => this.openClient(), delay * 1000);
  }

  /** Goes offline on purpose: OFFLINE status, memberships cleared, DISCONNECT; no reconnect after this. */
  async quit() {
    this.stopped = true;
    this.timers.clearTimeout(this.reconnectTimer);
    this.stopHeartbeats();
    const client = this.client;
    if (client && this.connected) {
      try {
        if (this.room) await this.leave();
        await this.publishStatus(false);
      } catch (error) {
        this.onEvent({ type: "error", message: error.message });
      }
    }
    this.connected = false;
    this.client = null;
    if (client) await new Promise((resolve) => client.end(false, {}, resolve));
    this.onEvent({ type: "connection", state: "closed" });
  }

  // ------------------------------------------------------------------------------------------ rooms

  /** Joins `room` (leaving the current one first); `announce` false only re-establishes after a reconnect. */
  async join(room, { announce = true } = {}) {
    this.requireConnected();
    if (this.room === room) return;
    if (this.room) await this.leave();
    this.room = room; // set first: retained memberships arrive as soon as the broker has the subscription
    await this.subscribe({ [topics.roomMessages(room)]: { qos: 2 }, [topics.membersFilter(room)]: { qos: 1 } });
    const join = this.envelopes.join(room);
    const payload = encodeEnvelope(join);
    this.dedup.markSeen(join.messageId);
    await this.publish(topics.roomMember(room, this.userId), payload, 1, true);
    this.sent = null;
    this.hearMyself(room, this.intervalMs());
    if (announce) await this.publish(topics.roomMessages(room), payload, 1);
  }

  /** Leaves the joined room: LEAVE announced, retained membership cleared, unsubscribed. */
  async leave() {
    const room = this.room;
    if (!room) return;
    this.requireConnected();
    const leave = this.envelopes.leave(room);
    this.dedup.markSeen(leave.messageId);
    await this.publish(topics.roomMessages(room), encodeEnvelope(leave), 1);
    await this.publish(topics.roomMember(room, this.userId), "", 1, true);
    this.room = null;
    this.timers.clearTimeout(this.answerTimer);
    this.answerTimer = null;
    await new Promise((resolve, reject) =>
      this.client.unsubscribe([topics.roomMessages(room), topics.membersFilter(room)], (e) => (e ? reject(e) : resolve())));
    this.tracker.forget(room);
    this.onEvent({ type: "members" });
  }

  members() { return this.room ? this.tracker.members(this.room) : []; }
  onlineUsers() { return this.tracker.onlineUsers(); }

  // ------------------------------------------------------------------------------------------ sending

  /** Sends a text to the room (QoS 1); resolves to the record shown as "sent". */
  sendText(text) { return this.sendRoom(this.envelopes.text(text, this.requireRoom()), 1, { text }); }

  /** Sends a gift to the room (QoS 2, exactly once). */
  sendGift(name, count = 1) {
    return this.sendRoom(this.envelopes.gift({ name, count }, this.requireRoom()), 2, { gift: { name, count, url: "" } });
  }

  /** Sends a direct message to `recipient`'s inbox (QoS 1). */
  async sendDirect(text, recipient) {
    this.requireConnected();
    const envelope = this.envelopes.direct(text, recipient);
    this.dedup.markSeen(envelope.messageId); // a message to oneself comes back through the inbox: shown once
    await this.publish(topics.inbox(recipient), encodeEnvelope(envelope), 1);
    return this.sentRecord(envelope, { peer: recipient }, { text });
  }

  async sendRoom(envelope, qos, content) {
    this.requireConnected();
    this.dedup.markSeen(envelope.messageId); // our own copy comes back from the broker: ignore it
    await this.publish(topics.roomMessages(envelope.room), encodeEnvelope(envelope), qos);
    return this.sentRecord(envelope, { room: envelope.room }, content);
  }

  sentRecord(envelope, conversation, content) {
    return {
      id: envelope.messageId, sender: { id: this.userId, profile: this.envelopes.user() },
      sentAtMs: Number(envelope.sentAtMs), conversation, content, direction: "sent",
    };
  }

  requireConnected() { if (!this.client || !this.connected) throw new Error("not connected"); }
  requireRoom() { if (!this.room) throw new Error("you are not in a room"); return this.room; }

  publish(topic, payload, qos, retain = false) {
    return new Promise((resolve, reject) =>
      this.client.publish(topic, payload, { qos, retain }, (error) => (error ? reject(error) : resolve())));
  }

  subscribe(filters) {
    return new Promise((resolve, reject) =>
      this.client.subscribe(filters, (error, granted) => {
        if (error) return reject(error);
        const refused = (granted ?? []).filter((g) => g.qos === 128).map((g) => g.topic);
        return refused.length ? reject(new Error(`subscription refused: ${refused.join(", ")}`)) : resolve(granted);
      }));
  }

  publishStatus(online) {
    return this.publish(topics.status(this.userId), encodeEnvelope(this.envelopes.status(online)), 1, true);
  }

  /** The heartbeat interval of the joined room: the base times ceil(members / 10) (HeartbeatSchedule in Swift). */
  intervalMs() { return this.heartbeatMs * heartbeatMultiplier(this.members().length); }

  /** One tick per base interval: heartbeat when the room's interval has passed or changed; and a sweep that drops
   *  silent members, four times per base interval (so at most 25 % late). */
  startHeartbeats() {
    this.stopHeartbeats();
    this.heartbeatTimer = this.timers.setInterval(() => {
      this.tick += 1;
      if (!this.connected || !this.room) return;
      const multiplier = heartbeatMultiplier(this.members().length);
      if (this.sent && this.sent.multiplier === multiplier && this.tick - this.sent.tick < multiplier) return;
      this.sendHeartbeat();
    }, this.heartbeatMs);
    this.sweepTimer = this.timers.setInterval(() => this.sweep(), this.heartbeatMs / 4);
  }

  stopHeartbeats() {
    this.timers.clearInterval(this.heartbeatTimer);
    this.timers.clearInterval(this.sweepTimer);
    this.timers.clearTimeout(this.answerTimer);
    this.heartbeatTimer = this.sweepTimer = this.answerTimer = null;
  }

  /** "I am here" in the joined room (QoS 0: a lost heartbeat is simply late), announcing the room's interval. */
  sendHeartbeat() {
    if (!this.client || !this.connected || !this.room) return;
    const intervalMs = this.intervalMs();
    this.sent = { tick: this.tick, multiplier: intervalMs / this.heartbeatMs };
    this.heartbeatSequence += 1n;
    const heartbeat = this.envelopes.heartbeat(this.heartbeatSequence, this.room, intervalMs);
    this.hearMyself(this.room, intervalMs);
    this.client.publish(topics.roomMessages(this.room), encodeEnvelope(heartbeat), { qos: 0 });
  }

  /** Answers a newcomer's JOIN ("who is here?") in the room after a random delay of up to half an interval, so a
   *  big room does not answer in one burst; one pending answer covers any number of JOINs. */
  answerWhoIsHere() {
    if (this.answerTimer !== null) return;
    const delay = Math.floor(this.random() * this.intervalMs() / 2);
    this.answerTimer = this.timers.setTimeout(() => { this.answerTimer = null; this.sendHeartbeat(); }, delay);
  }

  /** Our own messages may not come back (and are not needed to know we are here). */
  hearMyself(room, intervalMs) {
    this.applyPresence({
      kind: "heard", room, user: this.userId, session: this.session, profile: this.envelopes.user(), intervalMs,
    });
  }

  sweep() {
    const changes = this.tracker.expire(this.now());
    for (const change of changes) this.onEvent({ type: "presence", change });
    if (changes.length) this.onEvent({ type: "members" });
  }

  applyPresence(input, retained = false) {
    const changes = this.tracker.apply(input, this.now(), retained);
    for (const change of changes) this.onEvent({ type: "presence", change });
    if (changes.length) this.onEvent({ type: "members" });
  }

  // ------------------------------------------------------------------------------------------ receiving

  handle(topic, payload, retained = false) {
    let inbound;
    try { inbound = interpret(topic, payload, this.userId); } catch (error) {
      if (error instanceof InboundError) return; // not a valid chat message: dropped, as the Swift client does
      throw error;
    }
    switch (inbound.kind) {
      case "presence": {
        const input = inbound.input;
        if (input.kind.startsWith("membership") && input.room !== this.room) return;
        this.applyPresence(input, retained);
        this.onEvent({ type: "members" });
        return;
      }
      // Presence changes already say who came and went; the announcements are live presence (and a JOIN asks).
      case "joinAnnouncement": {
        if (!this.dedup.markSeen(inbound.messageId) || inbound.room !== this.room) return;
        const { member, session } = inbound;
        this.applyPresence({ kind: "heard", room: inbound.room, user: member.id, session, profile: member.profile });
        if (member.id !== this.userId) this.answerWhoIsHere();
        return;
      }
      case "leaveAnnouncement":
        if (!this.dedup.markSeen(inbound.messageId) || inbound.room !== this.room) return;
        this.applyPresence({ kind: "membershipCleared", room: inbound.room, user: inbound.member.id });
        return;
      case "heartbeat": {
        if (inbound.room !== this.room) return;
        const { member, session, intervalMs } = inbound;
        this.applyPresence({ kind: "heard", room: inbound.room, user: member.id, session, profile: member.profile, intervalMs });
        return;
      }
      case "message":
        if (!this.dedup.markSeen(inbound.record.id)) return;
        if (inbound.record.conversation.room !== undefined && inbound.record.conversation.room !== this.room) return;
        this.onEvent({ type: "message", record: inbound.record });
        return;
      default:
        return;
    }
  }
}
