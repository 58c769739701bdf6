/**
 * The skills catalogue: folders `$AGENTD_HOME/skills/<name>/SKILL.md`, each
 * YAML front matter (`name`, `description`) and a markdown body. Read with
 * async I/O on every request, so a skill added or edited is seen at once and
 * main never blocks. A malformed SKILL.md is skipped with a logged reason.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { Logger } from '../shared/log.ts';
import { isValidAgentName } from '../shared/config.ts';

export interface Skill {
  name: string;
  description: string;
  body: string;
}

const FRONT_MATTER = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/;

/** Parses a SKILL.md; returns the reason when it is malformed. */
export function parseSkill(folder: string, text: string): Skill | string {
  const m = FRONT_MATTER.exec(text);
  if (m === null) return 'it does not start with YAML front matter between "---" lines';
  let meta: unknown;
  try {
    meta = parseYaml(m[1]!);
  } catch (err) {
    return `its front matter is not valid YAML: ${(err as Error).message.split('\n')[0]}`;
  }
  if (typeof meta !== 'object' || meta === null) return 'its front matter is not a map';
  const { name, description } = meta as { name?: unknown; description?: unknown };
  if (typeof name !== 'string' || name === '') return 'its front matter has no name';
  if (name !== folder) return `its name "${name}" differs from its folder "${folder}"`;
  if (typeof description !== 'string') return 'its front matter has no description';
  return { name, description, body: m[2]! };
}

export class SkillCatalogue {
  readonly #dir: string;
  readonly #log: Logger;

  constructor(home: string, log: Logger) {
    this.#dir = join(home, 'skills');
    this.#log = log;
  }

  async #read(folder: string): Promise<Skill | null> {
    let text: string;
    try {
      text = await readFile(join(this.#dir, folder, 'SKILL.md'), 'utf8');
    } catch {
      return null; // a folder without SKILL.md is not a skill
    }
    const skill = parseSkill(folder, text);
    if (typeof skill === 'string') {
      this.#log.warn({ skill: folder, reason: skill }, 'skipping a malformed SKILL.md');
      return null;
    }
    return skill;
  }

  async list(): Promise<Skill[]> {
    let folders: string[];
    try {
      folders = (await readdir(this.#dir, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name);
    } catch {
      return []; // no skills folder: no skills
    }
    const skills = await Promise.all(folders.filter(isValidAgentName).map((f) => this.#read(f)));
    return skills.filter((s): s is Skill => s !== null).sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  async get(name: string): Promise<Skill | null> {
    if (!isValidAgentName(name)) return null; // also keeps a name from walking out of the folder
    return this.#read(name);
  }
}
