import { startTestGateway, type TestGateway } from './gateway';
import { startSmtp, type TestSmtp } from './smtp';

/** The first GraphQL error's `extensions.code`. */
export const errorCode = (r: { errors?: { extensions?: { code?: string } }[] }) => r.errors?.[0]?.extensions?.code;

/** A gateway whose team invites go out through a real SMTP server (smtp-server from npm), for the team tests. */
export async function startTeamGateway(env: Record<string, string> = {}): Promise<{ gw: TestGateway; smtp: TestSmtp }> {
  const smtp = await startSmtp();
  const gw = await startTestGateway({
    ROLE: 'api',
    SMTP_HOST: '127.0.0.1',
    SMTP_PORT: String(smtp.port),
    SMTP_FROM: 'Gateway <team@gateway.test>',
    TEAM_INVITE_URL: 'https://dashboard.gateway.test/invite',
    ...env,
  });
  return { gw, smtp };
}

export async function stopTeamGateway(t: { gw?: TestGateway; smtp?: TestSmtp }): Promise<void> {
  await t.gw?.close();
  await t.smtp?.close();
}
