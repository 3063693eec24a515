// What a line typed into the page's message box means: the terminal chat's commands (Sources/mqttchat/ChatInput.swift),
// so the same habits work in both. Pure; tested by web/test/commands.test.js.

export const HELP = [
  "Commands:",
  "  TEXT               say TEXT in the room (other /words are sent as text too; start with // for a leading /)",
  "  /gift NAME [COUNT] send a gift (COUNT defaults to 1)",
  "  /dm USER TEXT      send a direct message to USER (their user id)",
  "  /members           who is in the room",
  "  /leave             leave the room (direct messages still arrive)",
  "  /quit              leave and disconnect",
  "  /help              this help",
].join("\n");

const INT32_MAX = 0x7fffffff;

/** Parses one line: {kind: "text", text} | {kind: "gift", name, count} | {kind: "direct", user, text} |
 *  {kind: "members" | "leave" | "quit" | "help" | "nothing"} | {kind: "invalid", message}. */
export function parseInput(line) {
  const trimmed = line.trim();
  if (trimmed === "") return { kind: "nothing" };
  if (!trimmed.startsWith("/")) return { kind: "text", text: line };
  if (trimmed.startsWith("//")) return { kind: "text", text: trimmed.slice(1) };
  const words = trimmed.split(" ").filter((w) => w !== "");
  const [command, ...args] = words;
  switch (command) {
    case "/gift": {
      if (args.length < 1 || args.length > 2) return { kind: "invalid", message: "usage: /gift NAME [COUNT]" };
      const count = args.length === 2 ? (/^[0-9]+$/.test(args[1]) ? Number(args[1]) : NaN) : 1;
      if (!(count > 0 && count <= INT32_MAX)) return { kind: "invalid", message: "/gift: COUNT must be a positive number" };
      return { kind: "gift", name: args[0], count };
    }
    case "/dm": {
      if (args.length < 2) return { kind: "invalid", message: "usage: /dm USER TEXT" };
      // Keep the text as typed (inner spacing included): everything after the user name.
      const afterCommand = trimmed.slice(command.length).replace(/^ +/, "");
      return { kind: "direct", user: args[0], text: afterCommand.slice(args[0].length).replace(/^ +/, "") };
    }
    case "/members": return args.length === 0 ? { kind: "members" } : { kind: "invalid", message: "usage: /members" };
    case "/history": return { kind: "invalid", message: "/history: the browser keeps no history; mqttchat history does" };
    case "/leave": return { kind: "leave" };
    case "/quit": case "/exit": return { kind: "quit" };
    case "/help": case "/?": return { kind: "help" };
    default: return { kind: "text", text: line }; // not ours: say it in the room, where a bot may understand it
  }
}
