/**
 * Reference child for the RSS benchmark, with no crm-sync code: NDJSON read
 * by node:readline and JSON.parse line by line, nothing kept. It shows how
 * much a plain Node process's peak grows when JSON.parse internalizes a unique
 * short string per row (readRows parses with parseJson, which does not).
 * Usage: node --import tsx bench/rss-reference.ts PATH
 */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';

const path = process.argv[2];
if (path === undefined) throw new Error('usage: rss-reference.ts PATH');
let rows = 0;
for await (const line of createInterface({ input: createReadStream(path), crlfDelay: Infinity })) {
  if (line.trim() === '') continue;
  JSON.parse(line);
  rows++;
}
console.log(JSON.stringify({ rows, problems: 0, maxRssKb: process.resourceUsage().maxRSS }));
