/**
 * Child process of the RSS benchmark: reads one export to the end with
 * readRows, keeping nothing, and prints its row count and peak RSS as JSON.
 * Usage: node --import tsx bench/rss-child.ts PATH
 */
import { readRows } from '../src/crm/read.js';

const path = process.argv[2];
if (path === undefined) throw new Error('usage: rss-child.ts PATH');
let rows = 0;
let problems = 0;
for await (const batch of readRows({ path })) {
  rows += batch.length;
  for (const r of batch) if ('problem' in r) problems++;
}
// maxRSS is in kilobytes on Linux.
console.log(JSON.stringify({ rows, problems, maxRssKb: process.resourceUsage().maxRSS }));
