// The message box understands the terminal chat's commands (Sources/mqttchat/ChatInput.swift).
import assert from "node:assert/strict";
import { test } from "node:test";

import { parseInput } from "../commands.js";

test("commands parse as in mqttchat chat", () => {
  assert.deepEqual(parseInput("hello"), { kind: "text", text: "hello" });
  assert.deepEqual(parseInput("   "), { kind: "nothing" });
  assert.deepEqual(parseInput("//gift"), { kind: "text", text: "/gift" });
  assert.deepEqual(parseInput("/top"), { kind: "text", text: "/top" });
  assert.deepEqual(parseInput("/gift rose"), { kind: "gift", name: "rose", count: 1 });
  assert.deepEqual(parseInput("/gift rose 3"), { kind: "gift", name: "rose", count: 3 });
  assert.equal(parseInput("/gift rose 0").kind, "invalid");
  assert.equal(parseInput("/gift rose x").kind, "invalid");
  assert.equal(parseInput("/gift").kind, "invalid");
  assert.deepEqual(parseInput("/dm bob  two  spaces"), { kind: "direct", user: "bob", text: "two  spaces" });
  assert.equal(parseInput("/dm bob").kind, "invalid");
  assert.deepEqual(parseInput("/members"), { kind: "members" });
  assert.deepEqual(parseInput("/quit"), { kind: "quit" });
  assert.deepEqual(parseInput("/exit"), { kind: "quit" });
  assert.deepEqual(parseInput("/leave"), { kind: "leave" });
  assert.deepEqual(parseInput("/?"), { kind: "help" });
});
