/**
 * Scoped tokens on a PostgreSQL store shared by two daemons (as cluster nodes
 * share it): a token made on one is honoured by the other, and a revocation
 * made on the second holds on the first: its live connection is closed and
 * the token refused within the sweep period (5 s, docs/security.md).
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { testClient, testDaemon, waitFor } from '../helpers/daemon.ts';
import { needPostgres, testDatabase } from '../helpers/postgres.ts';

const CONFIG = { agents: { assistant: { model: 'echo' } } };
const skip = await needPostgres();

describe.skipIf(skip !== null)('scoped tokens on a shared PostgreSQL store', () => {
  it('a token made on one daemon works on another, and revoking it there cuts it on the first', async () => {
    const db = await testDatabase();
    const a = await testDaemon({ config: CONFIG, workers: 1, args: ['--store', db.url] });
    const b = await testDaemon({ config: CONFIG, workers: 1, args: ['--store', db.url] });
    const adminA = await testClient(a);
    const adminB = await testClient(b);
    const t = await adminA.createToken({ scopes: ['chat'], agents: ['assistant'], sender: 'alice' });
    expect((await adminB.listTokens()).map((x) => x.id)).toEqual([t.id]);

    const onA = await a.tcpClient({ token: t.token });
    onTestFinished(() => onA.close());
    const onB = await b.tcpClient({ token: t.token });
    onTestFinished(() => onB.close());
    expect((await onB.send('assistant', 'hello from b')).content).toBe('hello from b');
    await expect(onB.request('get_conversation_history', { agent: 'assistant', sender: 'bob' })).rejects.toMatchObject({ code: 403 });
    await expect(onA.request('create_agent', { name: 'rogue', config: {} })).rejects.toMatchObject({ code: 403 });

    await adminB.revokeToken(t.id);
    await onB.closed(); // at once on the node that revoked
    await expect(b.tcpClient({ token: t.token })).rejects.toMatchObject({ code: 401 });
    let closedOnA = false;
    void onA.closed().then(() => (closedOnA = true));
    await waitFor(() => closedOnA, 'the revoked token\'s connection on the other daemon to close', 20_000);
    await expect(a.tcpClient({ token: t.token })).rejects.toMatchObject({ code: 401 });
    expect(await adminA.listTokens()).toEqual([]);
  }, 120_000);
});
