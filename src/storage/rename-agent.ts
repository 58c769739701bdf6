/**
 * `rename_agent` in the store, whatever the database: the agent's row, its
 * conversations (and the answers it wrote as a guest elsewhere, and its turn
 * outcomes), the subscriptions that target it or listen for its `done`
 * event, and the webhooks that filter on it: all in one transaction, so the
 * store holds either name, never half of each. Each store runs the
 * statements with its own parameters (`@from`, `@to`, `@at` below: forPostgres turns them into `@from`, `@to`, `@at`).
 */
export const RENAME_STATEMENTS: readonly string[] = [
  'UPDATE conversations SET agent = @to WHERE agent = @from',
  'UPDATE messages SET agent = @to WHERE agent = @from',
  'UPDATE turn_outcomes SET agent = @to WHERE agent = @from',
  'UPDATE subscriptions SET target_agent = @to WHERE target_agent = @from',
  "UPDATE subscriptions SET source = 'agent:' || @to || ':done' WHERE source = 'agent:' || @from || ':done'",
];

/** The agent's row: renamed first, so that a rename of an agent the store lacks changes nothing. */
export const RENAME_AGENT_ROW = 'UPDATE agents SET name = @to, updated_at = @at WHERE name = @from';

/** A webhook's `agents` filter (a JSON list, or null for every agent) with the agent renamed; null when it does not name it. */
export function renamedFilter(agents: string | null, from: string, to: string): string | null {
  if (agents === null) return null;
  const list = JSON.parse(agents) as string[];
  return list.includes(from) ? JSON.stringify(list.map((a) => (a === from ? to : a))) : null;
}

/** A statement above with PostgreSQL's parameters: `@from`, `@to`, `@at` become `$1`, `$2`, `$3`. */
export function forPostgres(sql: string): string {
  return sql.replaceAll('@from', '$1').replaceAll('@to', '$2').replaceAll('@at', '$3');
}
