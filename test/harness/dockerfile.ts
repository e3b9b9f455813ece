/**
 * Replays a Dockerfile's stages on this machine, without Docker, so a test can
 * check what the image would hold and run. Each stage gets a folder standing
 * for its filesystem root; WORKDIR, ENV, COPY (from the build context or
 * --from a stage) and RUN (shell form, through `sh -c`) act on it as Docker
 * would; USER, EXPOSE, HEALTHCHECK and STOPSIGNAL are noted and skipped;
 * ENTRYPOINT and CMD (exec form) are kept, to run the stage's command. Any
 * other instruction throws, so the replay never silently diverges from the
 * file.
 *
 * The build context is the repository's files as git sees them (tracked and
 * untracked, without what .gitignore drops), less what .dockerignore drops.
 * Processes run with this machine's node and npm, not the base image's.
 */
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';

export interface Stage {
  name: string;
  /** The folder standing for the stage's `/`. */
  root: string;
  /** WORKDIR, as a path of the container. */
  workdir: string;
  env: Record<string, string>;
  entrypoint: string[];
  cmd: string[];
}

interface Instruction {
  keyword: string;
  args: string;
  line: number;
}

const METADATA = new Set(['USER', 'EXPOSE', 'HEALTHCHECK', 'STOPSIGNAL', 'LABEL']);

/** Instructions by stage name, continuation lines joined, comments dropped. */
export function parseDockerfile(text: string): Map<string, Instruction[]> {
  const stages = new Map<string, Instruction[]>();
  let current: Instruction[] | undefined;
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const start = i + 1;
    let line = lines[i]!;
    if (/^\s*(#|$)/.test(line)) continue;
    while (line.endsWith('\\') && i + 1 < lines.length) line = line.slice(0, -1) + lines[++i]!;
    const m = /^\s*(\w+)\s+(.*)$/.exec(line);
    if (!m) throw new Error(`Dockerfile line ${start}: cannot read "${line}"`);
    const ins = { keyword: m[1]!.toUpperCase(), args: m[2]!.trim(), line: start };
    if (ins.keyword === 'FROM') {
      const name = /\sAS\s+(\S+)$/i.exec(ins.args)?.[1] ?? `#${stages.size}`;
      current = [];
      stages.set(name, current);
    }
    if (!current) throw new Error(`Dockerfile line ${start}: ${ins.keyword} before FROM`);
    current.push(ins);
  }
  return stages;
}

/** A .dockerignore pattern as a test of a context path (no `!` exceptions). */
function ignoreRule(pattern: string): (path: string) => boolean {
  if (pattern.startsWith('!'))
    throw new Error(`.dockerignore exceptions are not replayed: ${pattern}`);
  const clean = posix.normalize(pattern.replace(/^\/+/, '')).replace(/\/+$/, '');
  const source = clean
    .split(/(\*\*\/|\*|\?)/)
    .map((part) =>
      part === '**/'
        ? '(?:.*/)?'
        : part === '*'
          ? '[^/]*'
          : part === '?'
            ? '[^/]'
            : part.replace(/[.+^${}()|[\]\\]/g, '\\$&'),
    )
    .join('');
  // A pattern that names a folder drops everything in it.
  const re = new RegExp(`^${source}(?:/.*)?$`);
  return (path) => re.test(path);
}

/** The build context: files git sees in `dir`, less what .dockerignore drops. */
export function buildContext(dir: string): string[] {
  const listed = spawnSync(
    'git',
    ['ls-files', '-z', '--cached', '--others', '--exclude-standard'],
    {
      cwd: dir,
      encoding: 'utf8',
    },
  );
  if (listed.status !== 0) throw new Error(`git ls-files failed: ${listed.stderr}`);
  const ignorePath = join(dir, '.dockerignore');
  const rules = existsSync(ignorePath)
    ? readFileSync(ignorePath, 'utf8')
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l && !l.startsWith('#'))
        .map(ignoreRule)
    : [];
  return [...new Set(listed.stdout.split('\0'))].filter(
    (p) => p && existsSync(join(dir, p)) && !rules.some((drop) => drop(p)),
  );
}

/** Runs `sh -c command`; rejects with the output's tail when it fails. */
function sh(command: string, cwd: string, env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', command], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0
        ? resolve()
        : reject(new Error(`RUN ${command} exited ${code}:\n${output.slice(-4000)}`)),
    );
  });
}

/** `K=V K2="V 2"` (ENV's modern form). */
function parseEnv(args: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of args.matchAll(/(\w+)=("(?:[^"\\]|\\.)*"|\S*)/g)) {
    out[m[1]!] = m[2]!.startsWith('"') ? (JSON.parse(m[2]!) as string) : m[2]!;
  }
  if (Object.keys(out).length === 0) throw new Error(`ENV ${args}: only K=V is replayed`);
  return out;
}

function execForm(keyword: string, args: string): string[] {
  if (!args.startsWith('[')) throw new Error(`${keyword} ${args}: only the exec form is replayed`);
  return JSON.parse(args) as string[];
}

export class DockerfileReplay {
  private readonly stages: Map<string, Instruction[]>;
  private readonly done = new Map<string, Stage>();
  private context?: Set<string>;

  /**
   * `contextDir`: the build context; `workspace`: an empty folder for the
   * stages' roots; `runEnv`: the environment of RUN steps, before ENV's.
   */
  constructor(
    dockerfile: string,
    private readonly contextDir: string,
    private readonly workspace: string,
    private readonly runEnv: NodeJS.ProcessEnv,
  ) {
    this.stages = parseDockerfile(readFileSync(dockerfile, 'utf8'));
  }

  /** Replays `name` (and the stages it builds on, once each). */
  async stage(name: string): Promise<Stage> {
    const known = this.done.get(name);
    if (known) return known;
    const instructions = this.stages.get(name);
    if (!instructions) throw new Error(`no stage ${name} in the Dockerfile`);
    const [from, ...rest] = instructions;
    const base = from!.args.split(/\s+/)[0]!;
    const root = join(this.workspace, name);
    let stage: Stage;
    if (this.stages.has(base)) {
      const parent = await this.stage(base);
      const writes = rest.some((i) => i.keyword === 'COPY' || i.keyword === 'RUN');
      // Hard links: a full copy of node_modules would take longer than the step.
      if (writes) run('cp', ['-al', parent.root, root]);
      stage = { ...parent, name, root: writes ? root : parent.root, env: { ...parent.env } };
    } else {
      mkdirSync(root, { recursive: true });
      stage = { name, root, workdir: '/', env: {}, entrypoint: [], cmd: [] };
    }
    for (const ins of rest) await this.apply(stage, ins);
    this.done.set(name, stage);
    return stage;
  }

  /** A container path of `stage` as a path on this machine. */
  static path(stage: Stage, containerPath: string): string {
    return join(stage.root, posix.resolve(stage.workdir, containerPath));
  }

  /** The stage's ENV, with values that are container paths turned into ours. */
  static env(stage: Stage): Record<string, string> {
    return Object.fromEntries(
      Object.entries(stage.env).map(([k, v]) => [
        k,
        v.startsWith('/') ? DockerfileReplay.path(stage, v) : v,
      ]),
    );
  }

  private async apply(stage: Stage, ins: Instruction): Promise<void> {
    const where = `Dockerfile line ${ins.line}`;
    switch (ins.keyword) {
      case 'WORKDIR':
        stage.workdir = posix.resolve(stage.workdir, ins.args);
        mkdirSync(DockerfileReplay.path(stage, '.'), { recursive: true });
        return;
      case 'ENV':
        Object.assign(stage.env, parseEnv(ins.args));
        return;
      case 'COPY':
        return this.copy(stage, ins.args, where);
      case 'RUN':
        if (ins.args.startsWith('[')) throw new Error(`${where}: RUN's exec form is not replayed`);
        return sh(ins.args, DockerfileReplay.path(stage, '.'), {
          ...this.runEnv,
          ...DockerfileReplay.env(stage),
        });
      case 'ENTRYPOINT':
        stage.entrypoint = execForm(ins.keyword, ins.args);
        return;
      case 'CMD':
        stage.cmd = execForm(ins.keyword, ins.args);
        return;
      default:
        if (!METADATA.has(ins.keyword)) throw new Error(`${where}: ${ins.keyword} is not replayed`);
    }
  }

  private async copy(stage: Stage, args: string, where: string): Promise<void> {
    const words = args.split(/\s+/);
    const flags = words.filter((w) => w.startsWith('--'));
    const paths = words.filter((w) => !w.startsWith('--'));
    const fromFlag = flags.find((f) => f.startsWith('--from='));
    if (flags.some((f) => f !== fromFlag && !f.startsWith('--chown='))) {
      throw new Error(`${where}: COPY ${args}: only --from and --chown are replayed`);
    }
    const dest = paths.pop()!;
    if (paths.length === 0) throw new Error(`${where}: COPY ${args}: no source`);
    const into = dest.endsWith('/') || paths.length > 1;
    const target = DockerfileReplay.path(stage, dest);
    for (const src of paths) {
      if (fromFlag) {
        const other = await this.stage(fromFlag.slice('--from='.length));
        const from = DockerfileReplay.path(other, src);
        if (!existsSync(from)) throw new Error(`${where}: ${src} is not in stage ${other.name}`);
        const to =
          into && !statSync(from).isDirectory() ? join(target, posix.basename(src)) : target;
        mkdirSync(dirname(to), { recursive: true });
        cpSync(from, to, { recursive: true, verbatimSymlinks: true });
        continue;
      }
      // From the context: a file, or a folder's contents (as Docker copies them).
      const rel = posix
        .normalize(src)
        .replace(/^\.\/?/, '')
        .replace(/\/+$/, '');
      const files = this.contextFiles().filter((p) => p === rel || p.startsWith(`${rel}/`));
      if (files.length === 0) throw new Error(`${where}: ${src} is not in the build context`);
      for (const file of files) {
        const to =
          file === rel
            ? into
              ? join(target, posix.basename(file))
              : target
            : join(target, file.slice(rel.length + 1));
        mkdirSync(dirname(to), { recursive: true });
        cpSync(join(this.contextDir, file), to);
      }
    }
  }

  private contextFiles(): string[] {
    this.context ??= new Set(buildContext(this.contextDir));
    return [...this.context];
  }
}

function run(command: string, args: string[]): void {
  const r = spawnSync(command, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${command} ${args.join(' ')}: ${r.stderr}`);
}
