// A hand-written protobuf codec for mqttchat.v1.Envelope (Sources/MQTTChat/Proto/chat.proto).
//
// Why by hand: no protobuf library for JavaScript is packaged for this machine (Debian or PyPI), and protoc
// has no JavaScript generator here; the schema is small. The wire bytes must equal what the Swift layer
// (swift-protobuf) writes, which web/test/golden.json pins down. Rules that matter for that:
//   - fields are written in field-number order; proto3 scalars equal to their default (0, "", empty bytes)
//     are omitted, sub-messages are written whenever present (even if empty), and a oneof member always is;
//   - int32 and enum values that are negative are written as 10-byte varints (sign-extended to 64 bits);
//   - 64-bit fields (sent_at_ms, sequence) are BigInt after decoding; encoding takes a BigInt or a safe Number.
// Decoding skips unknown fields (and known fields with an unexpected wire type, as protobuf does), keeps enum
// values it does not know as numbers, and rejects truncated input and invalid UTF-8 (so does swift-protobuf).
//
// Objects use the proto3 JSON names (messageId, sentAtMs, iconUrl, ...), so a decoded envelope can be compared
// with swift-protobuf's JSON output; see toProto3Json.

/** MessageType: the design notes' numbers are kept (join 0, leave 1, text 2, gift 3, heartbeat 8). */
export const MessageType = Object.freeze({ JOIN: 0, LEAVE: 1, TEXT: 2, GIFT: 3, DIRECT: 4, STATUS: 5, HEARTBEAT: 8 });
/** UserStatus.State. */
export const StatusState = Object.freeze({ OFFLINE: 0, ONLINE: 1 });

// Field tables: number -> [name, kind, sub-schema or enum]. Kinds: string, int32, uint32, int64, uint64, enum, message.
const UserInfo = { 1: ["level", "int32"], 2: ["name", "string"], 3: ["iconUrl", "string"] };
const ChatMessage = { 1: ["user", "message", UserInfo], 2: ["text", "string"] };
const GiftMessage = {
  1: ["user", "message", UserInfo], 2: ["giftName", "string"], 3: ["giftUrl", "string"], 4: ["giftCount", "int32"],
};
const JoinEvent = { 1: ["user", "message", UserInfo], 2: ["sessionId", "string"] };
const LeaveEvent = { 1: ["user", "message", UserInfo] };
const DirectMessage = { 1: ["user", "message", UserInfo], 2: ["text", "string"], 3: ["recipient", "string"] };
const UserStatus = { 1: ["state", "enum", StatusState], 2: ["user", "message", UserInfo], 3: ["sessionId", "string"] };
// A heartbeat says "I am here" on its own: session and profile make its sender present, interval_ms says when the
// next one is due (0 from a client older than presence by heartbeat).
const Heartbeat = {
  1: ["sequence", "uint64"], 2: ["sessionId", "string"], 3: ["user", "message", UserInfo], 4: ["intervalMs", "uint32"],
};
const Envelope = {
  1: ["messageId", "string"], 2: ["senderId", "string"], 3: ["room", "string"], 4: ["sentAtMs", "int64"],
  5: ["type", "enum", MessageType],
  10: ["join", "message", JoinEvent], 11: ["leave", "message", LeaveEvent], 12: ["text", "message", ChatMessage],
  13: ["gift", "message", GiftMessage], 14: ["direct", "message", DirectMessage], 15: ["status", "message", UserStatus],
  18: ["heartbeat", "message", Heartbeat],
};
/** The members of Envelope's `oneof body`: setting one while decoding clears the others. */
export const BODY_FIELDS = Object.freeze(["join", "leave", "text", "gift", "direct", "status", "heartbeat"]);
const ONEOF = new Map([[Envelope, new Set(BODY_FIELDS)]]);
/** The schemas, for tests and tools. */
export const schemas = Object.freeze({
  Envelope, UserInfo, ChatMessage, GiftMessage, JoinEvent, LeaveEvent, DirectMessage, UserStatus, Heartbeat,
});

const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder("utf-8", { fatal: true });
const MASK64 = (1n << 64n) - 1n;

/** Thrown for bytes that are not a valid encoding. */
export class DecodeError extends Error {}

// ---------------------------------------------------------------------------------------------- encoding

class Writer {
  constructor() { this.bytes = []; }
  varint(value) { // value: a BigInt in 0 ..< 2^64
    let v = value;
    while (v >= 0x80n) { this.bytes.push(Number(v & 0x7fn) | 0x80); v >>= 7n; }
    this.bytes.push(Number(v));
  }
  tag(number, wireType) { this.varint(BigInt(number * 8 + wireType)); }
  lengthDelimited(number, payload) { this.tag(number, 2); this.varint(BigInt(payload.length)); this.bytes.push(...payload); }
}

function toBigInt(value, name) {
  if (typeof value === "bigint") return value;
  if (typeof value === "number" && Number.isSafeInteger(value)) return BigInt(value);
  throw new TypeError(`${name}: expected an integer (BigInt or safe Number), got ${value}`);
}

function encodeMessage(schema, object) {
  const w = new Writer();
  const numbers = Object.keys(schema).map(Number).sort((a, b) => a - b);
  for (const number of numbers) {
    const [name, kind, sub] = schema[number];
    const value = object[name];
    if (value === undefined || value === null) continue;
    switch (kind) {
      case "string": {
        if (typeof value !== "string") throw new TypeError(`${name}: expected a string`);
        if (value === "") break;
        w.lengthDelimited(number, utf8Encoder.encode(value));
        break;
      }
      case "int32":
      case "enum": {
        if (!Number.isInteger(value) || value < -0x80000000 || value > 0x7fffffff) {
          throw new TypeError(`${name}: expected a 32-bit integer, got ${value}`);
        }
        if (value === 0) break;
        w.tag(number, 0);
        w.varint(BigInt.asUintN(64, BigInt(value)));
        break;
      }
      case "uint32": {
        if (!Number.isInteger(value) || value < 0 || value > 0xffffffff) {
          throw new TypeError(`${name}: expected an unsigned 32-bit integer, got ${value}`);
        }
        if (value === 0) break;
        w.tag(number, 0);
        w.varint(BigInt(value));
        break;
      }
      case "int64":
      case "uint64": {
        const big = toBigInt(value, name);
        if (big === 0n) break;
        if (kind === "uint64" ? big < 0n || big > MASK64 : big < -(1n << 63n) || big >= (1n << 63n)) {
          throw new TypeError(`${name}: ${big} is out of range for ${kind}`);
        }
        w.tag(number, 0);
        w.varint(BigInt.asUintN(64, big));
        break;
      }
      case "message":
        w.lengthDelimited(number, encodeMessage(sub, value));
        break;
      default:
        throw new Error(`unknown kind ${kind}`);
    }
  }
  return w.bytes;
}

/** Encodes an envelope object (at most one body member set) into a Uint8Array. */
export function encodeEnvelope(envelope) {
  const bodies = BODY_FIELDS.filter((name) => envelope[name] !== undefined && envelope[name] !== null);
  if (bodies.length > 1) throw new TypeError(`more than one body member set: ${bodies.join(", ")}`);
  return Uint8Array.from(encodeMessage(Envelope, envelope));
}

// ---------------------------------------------------------------------------------------------- decoding

class Reader {
  constructor(bytes, start = 0, end = bytes.length) { this.bytes = bytes; this.pos = start; this.end = end; }
  get done() { return this.pos >= this.end; }
  varint() { // a BigInt in 0 ..< 2^64
    let result = 0n;
    for (let shift = 0n; shift < 70n; shift += 7n) {
      if (this.pos >= this.end) throw new DecodeError("truncated varint");
      const byte = this.bytes[this.pos++];
      result |= BigInt(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return result & MASK64;
    }
    throw new DecodeError("varint longer than 10 bytes");
  }
  skip(count) {
    if (count < 0 || this.pos + count > this.end) throw new DecodeError("truncated field");
    this.pos += count;
  }
  lengthDelimited() {
    const length = this.varint();
    if (length > BigInt(this.end - this.pos)) throw new DecodeError("truncated length-delimited field");
    const start = this.pos;
    this.pos += Number(length);
    return [start, this.pos];
  }
  /** Skips one field of `wireType` whose tag was just read (groups included, nested to any depth). */
  skipField(wireType, number) {
    switch (wireType) {
      case 0: this.varint(); return;
      case 1: this.skip(8); return;
      case 2: this.lengthDelimited(); return;
      case 5: this.skip(4); return;
      case 3:
        for (;;) {
          const [innerNumber, innerType] = this.tag();
          if (innerType === 4) {
            if (innerNumber !== number) throw new DecodeError("mismatched end-group");
            return;
          }
          this.skipField(innerType, innerNumber);
        }
      default:
        throw new DecodeError(`invalid wire type ${wireType}`);
    }
  }
  tag() {
    const key = this.varint();
    const number = Number(key >> 3n);
    if (number === 0 || number > 0x1fffffff) throw new DecodeError(`invalid field number ${number}`);
    return [number, Number(key & 7n)];
  }
}

const WIRE_TYPE = { string: 2, message: 2, int32: 0, uint32: 0, enum: 0, int64: 0, uint64: 0 };

function defaults(schema) {
  const object = {};
  for (const [name, kind] of Object.values(schema)) {
    if (kind === "string") object[name] = "";
    else if (kind === "int32" || kind === "uint32" || kind === "enum") object[name] = 0;
    else if (kind === "int64" || kind === "uint64") object[name] = 0n;
  }
  return object;
}

function decodeMessage(schema, bytes, start, end, into) {
  const object = into ?? defaults(schema);
  const oneof = ONEOF.get(schema);
  const r = new Reader(bytes, start, end);
  while (!r.done) {
    const [number, wireType] = r.tag();
    const field = schema[number];
    if (!field || wireType !== WIRE_TYPE[field[1]]) {
      r.skipField(wireType, number); // unknown (or a wire type this schema does not expect): skipped
      continue;
    }
    const [name, kind, sub] = field;
    switch (kind) {
      case "string": {
        const [s, e] = r.lengthDelimited();
        try { object[name] = utf8Decoder.decode(bytes.subarray(s, e)); } catch {
          throw new DecodeError(`${name}: invalid UTF-8`);
        }
        break;
      }
      case "int32":
      case "enum": // an unknown enum value is kept as its number (proto3 open enums)
        object[name] = Number(BigInt.asIntN(32, r.varint()));
        break;
      case "uint32": // a larger varint is truncated to its low 32 bits, as protobuf specifies
        object[name] = Number(BigInt.asUintN(32, r.varint()));
        break;
      case "int64":
        object[name] = BigInt.asIntN(64, r.varint());
        break;
      case "uint64":
        object[name] = r.varint();
        break;
      case "message": {
        const [s, e] = r.lengthDelimited();
        if (oneof?.has(name)) {
          for (const other of oneof) if (other !== name) delete object[other];
        }
        // A repeated occurrence of a sub-message merges into the first, as protobuf specifies.
        object[name] = decodeMessage(sub, bytes, s, e, object[name]);
        break;
      }
    }
  }
  return object;
}

/** Decodes an envelope from a Uint8Array (or array of bytes); throws DecodeError on malformed input. */
export function decodeEnvelope(bytes) {
  const view = bytes instanceof Uint8Array ? bytes : Uint8Array.from(bytes);
  return decodeMessage(Envelope, view, 0, view.length);
}

/** Which body member an envelope carries ("text", "gift", ...), or undefined. */
export function bodyCase(envelope) {
  return BODY_FIELDS.find((name) => envelope[name] !== undefined);
}

// ---------------------------------------------------------------------------------------------- JSON view

function enumName(enumeration, value) {
  return Object.keys(enumeration).find((key) => enumeration[key] === value) ?? value;
}

function jsonOf(schema, object) {
  const json = {};
  const numbers = Object.keys(schema).map(Number).sort((a, b) => a - b);
  for (const number of numbers) {
    const [name, kind, sub] = schema[number];
    const value = object[name];
    if (value === undefined || value === null || value === "" || value === 0 || value === 0n) continue;
    if (kind === "message") json[name] = jsonOf(sub, value);
    else if (kind === "enum") json[name] = enumName(sub, value);
    else if (kind === "int64" || kind === "uint64") json[name] = String(value);
    else json[name] = value;
  }
  return json;
}

/** The proto3 JSON mapping of an envelope (defaults omitted, 64-bit as strings, enums by name). */
export function toProto3Json(envelope) {
  return jsonOf(Envelope, envelope);
}

/** Bytes as lowercase hex, and back (for fixtures and debugging). */
export function toHex(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
export function fromHex(hex) {
  if (hex.length % 2 !== 0 || /[^0-9a-f]/i.test(hex)) throw new TypeError("not a hex string");
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}
