// Parse each Mermaid block of a JSON list with Mermaid's own parser (mermaid.parse), in Node with
// jsdom standing in for the browser's DOM. Prints the diagram type of each; exits 1 at the first
// block that does not parse, with Mermaid's message. Run from the folder where mermaid and jsdom are
// installed (the test copies it there).
import fs from 'node:fs';
import { JSDOM } from 'jsdom';

const dom = new JSDOM('<!doctype html><html><body></body></html>');
globalThis.window = dom.window;
globalThis.document = dom.window.document;
for (const name of ['DOMParser', 'Element', 'HTMLElement', 'SVGElement', 'Node']) {
  if (!(name in globalThis)) globalThis[name] = dom.window[name];
}
const { default: mermaid } = await import('mermaid');
mermaid.initialize({ startOnLoad: false });

const blocks = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const types = [];
for (const [i, text] of blocks.entries()) {
  try {
    const parsed = await mermaid.parse(text);
    types.push(parsed.diagramType);
  } catch (e) {
    console.error(`block ${i}: ${String(e.message || e)}`);
    process.exit(1);
  }
}
console.log(JSON.stringify(types));
