// The web runner's local server on its own, for tests: one cell in flight, as drive.mjs sets it.
//   node web_server.mjs BUNDLE OUT MODULES
// prints {"url", "secret"} on the first line, then one {"settled": …} line per settle; ends with stdin.
import { listedFiles, listen, newSecret } from '../../ci_onnx/runners/web/drive.mjs';

const [bundle, out, modules] = process.argv.slice(2);
const cell = {};
const { server, url } = await listen(cell);
const secret = newSecret();
const say = (obj) => process.stdout.write(`${JSON.stringify(obj)}\n`);
cell.current = {
  args: { bundle, out, modules },
  config: { cell: 'test' },
  secret,
  listed: listedFiles(bundle),
  settle: (err, body) => say({ settled: err ? String(err.message) : body.toString('utf8') }),
};
say({ url, secret });
process.stdin.resume();
process.stdin.on('end', () => server.close(() => process.exit(0)));
