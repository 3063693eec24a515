// Names, topics and the interpretation of received messages: a port of the Swift layer's ChatNameValidator,
// ChatTopics and ChatInboundInterpreter (Sources/MQTTChat), so the page accepts and rejects exactly what a
// Swift client does. Pure: no I/O, no DOM; tested by web/test/inbound.test.js.

import { decodeEnvelope, DecodeError, StatusState } from "./envelope.js";

export const ROOT = "mqttchat";
const MAX_NAME_BYTES = 64;
const utf8 = new TextEncoder();

/** Why `name` cannot be a room name or user id (one MQTT topic level), or null if it can. */
export function nameProblem(name) {
  const bytes = utf8.encode(name);
  if (bytes.length === 0) return "is empty";
  if (bytes.length > MAX_NAME_BYTES) return `is longer than ${MAX_NAME_BYTES} UTF-8 bytes`;
  if (name.includes("+")) return "contains +";
  if (name.includes("#")) return "contains #";
  if (name.includes("/")) return "contains /";
  if (name.includes("\u0000")) return "contains U+0000";
  return null;
}

export const isValidName = (name) => nameProblem(name) === null;

/** Topic names (TOPICS.md). Callers pass validated names only. */
export const topics = {
  roomMessages: (room) => `${ROOT}/rooms/${room}/messages`,
  roomMember: (room, user) => `${ROOT}/rooms/${room}/members/${user}`,
  membersFilter: (room) => `${ROOT}/rooms/${room}/members/+`,
  inbox: (user) => `${ROOT}/users/${user}/inbox`,
  status: (user) => `${ROOT}/users/${user}/status`,
  allStatusesFilter: `${ROOT}/users/+/status`,
};

/** Parses a received topic name: {kind, room?, user?}, or null when it is not a chat topic. */
export function parseTopic(name) {
  const levels = name.split("/");
  if (levels[0] !== ROOT) return null;
  if (levels.length === 4 && levels[1] === "rooms" && levels[3] === "messages" && isValidName(levels[2])) {
    return { kind: "roomMessages", room: levels[2] };
  }
  if (levels.length === 5 && levels[1] === "rooms" && levels[3] === "members" && isValidName(levels[2])
    && isValidName(levels[4])) {
    return { kind: "roomMember", room: levels[2], user: levels[4] };
  }
  if (levels.length === 4 && levels[1] === "users" && isValidName(levels[2])) {
    if (levels[3] === "inbox") return { kind: "inbox", user: levels[2] };
    if (levels[3] === "status") return { kind: "status", user: levels[2] };
  }
  return null;
}

/** Why a received message was not a valid chat message. */
export class InboundError extends Error {}

const profileOf = (user) => ({ name: user?.name ?? "", level: user?.level ?? 0, iconUrl: user?.iconUrl ?? "" });

/**
 * Interprets one received (topic, payload) for user `me`, checking that the envelope agrees with its topic (so a
 * confused or malicious publisher cannot, say, put a gift into another room). Returns one of
 *   {kind: "presence", input}  input: {kind: "membership", room, user, session, profile} | {kind: "membershipCleared",
 *                              room, user} | {kind: "status", user, online, session, profile} | {kind: "statusCleared", user}
 *   {kind: "joinAnnouncement", room, member: {id, profile}, session, messageId} (a JOIN also asks "who is here?")
 *   {kind: "leaveAnnouncement", room, member: {id, profile}, messageId}
 *   {kind: "message", record: {id, sender: {id, profile}, sentAtMs, conversation: {room} | {peer}, content:
 *                              {text} | {gift: {name, count, url}}, direction: "sent" | "received"}}
 *   {kind: "heartbeat", room, sender, sequence, member: {id, profile}, session, intervalMs} (intervalMs 0: unknown)
 * and throws InboundError otherwise.
 */
export function interpret(topic, payload, me) {
  const parsed = parseTopic(topic);
  if (!parsed) throw new InboundError(`not a chat topic: ${topic}`);
  if (payload.length === 0) {
    if (parsed.kind === "roomMember") {
      return { kind: "presence", input: { kind: "membershipCleared", room: parsed.room, user: parsed.user } };
    }
    if (parsed.kind === "status") return { kind: "presence", input: { kind: "statusCleared", user: parsed.user } };
  }
  let envelope;
  try { envelope = decodeEnvelope(payload); } catch (error) {
    if (error instanceof DecodeError) throw new InboundError(`undecodable payload on ${topic}: ${error.message}`);
    throw error;
  }
  const sender = envelope.senderId;
  if (!isValidName(sender)) throw new InboundError(`invalid sender ${JSON.stringify(sender)}`);
  const mismatch = () => new InboundError(`envelope does not match its topic ${topic}`);
  const unexpected = () => new InboundError(`unexpected body on ${topic}`);

  switch (parsed.kind) {
    case "roomMember": {
      if (!envelope.join) throw unexpected();
      if (sender !== parsed.user || envelope.room !== parsed.room) throw mismatch();
      return { kind: "presence", input: {
        kind: "membership", room: parsed.room, user: parsed.user, session: envelope.join.sessionId,
        profile: profileOf(envelope.join.user) } };
    }
    case "status": {
      const status = envelope.status;
      if (!status) throw unexpected();
      if (sender !== parsed.user) throw mismatch();
      return { kind: "presence", input: {
        kind: "status", user: parsed.user, online: status.state === StatusState.ONLINE, session: status.sessionId,
        profile: profileOf(status.user) } };
    }
    case "inbox": {
      const direct = envelope.direct;
      if (!direct) throw unexpected();
      if (direct.recipient !== parsed.user) throw mismatch();
      const peer = sender === me ? parsed.user : sender;
      return { kind: "message", record: record(envelope, me, direct.user, { peer }, { text: direct.text }) };
    }
    case "roomMessages":
      return roomMessage(envelope, me, parsed.room, unexpected, mismatch);
  }
  throw new InboundError(`unhandled topic ${topic}`);
}

function roomMessage(envelope, me, room, unexpected, mismatch) {
  if (envelope.direct || envelope.status) throw unexpected();
  if (envelope.room !== room) throw mismatch();
  const member = (user) => ({ id: envelope.senderId, profile: profileOf(user) });
  if (envelope.join) {
    return {
      kind: "joinAnnouncement", room, member: member(envelope.join.user), session: envelope.join.sessionId,
      messageId: envelope.messageId,
    };
  }
  if (envelope.leave) {
    return { kind: "leaveAnnouncement", room, member: member(envelope.leave.user), messageId: envelope.messageId };
  }
  if (envelope.text) {
    return { kind: "message", record: record(envelope, me, envelope.text.user, { room }, { text: envelope.text.text }) };
  }
  if (envelope.gift) {
    const g = envelope.gift;
    const content = { gift: { name: g.giftName, count: g.giftCount, url: g.giftUrl } };
    return { kind: "message", record: record(envelope, me, g.user, { room }, content) };
  }
  if (envelope.heartbeat) {
    const h = envelope.heartbeat;
    return {
      kind: "heartbeat", room, sender: envelope.senderId, sequence: h.sequence, member: member(h.user),
      session: h.sessionId, intervalMs: h.intervalMs,
    };
  }
  throw unexpected();
}

function record(envelope, me, user, conversation, content) {
  return {
    id: envelope.messageId,
    sender: { id: envelope.senderId, profile: profileOf(user) },
    sentAtMs: Number(envelope.sentAtMs),
    conversation,
    content,
    direction: envelope.senderId === me ? "sent" : "received",
  };
}
