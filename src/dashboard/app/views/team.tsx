import { useState } from 'preact/hooks';
import { gql } from '../api';
import {
  ChangeTeamMemberRoleDocument,
  InviteTeamMemberDocument,
  RemoveTeamMemberDocument,
  RevokeTeamInviteDocument,
  TeamDocument,
  type TeamRole,
} from '../documents';
import { when } from '../i18n';
import { Empty, ErrorLine, Show, useAction, useApp, useLoad } from '../ui';
import { useReauth } from './reauth';
import { SettingsTabs } from './settings-tabs';

const ROLES: TeamRole[] = ['OWNER', 'ADMIN', 'DEVELOPER', 'FINANCE', 'VIEWER'];

function RoleSelect({
  name,
  value,
  initial,
  onChange,
  id,
}: {
  name?: string;
  value?: TeamRole;
  initial?: TeamRole;
  onChange?: (r: TeamRole) => void;
  id?: string;
}) {
  const { t } = useApp();
  return (
    <select
      name={name}
      id={id}
      value={value}
      defaultValue={initial}
      aria-label={t.role}
      onChange={onChange && ((e) => onChange(e.currentTarget.value as TeamRole))}
    >
      {ROLES.map((r) => (
        <option value={r}>{t.roles[r]}</option>
      ))}
    </select>
  );
}

/**
 * The team: members with their roles, pending invites; invite by email with a role, change a role,
 * remove a member, revoke an invite. Each change asks for the password again when the session's
 * re-authentication has lapsed.
 */
export function Team() {
  const { t, lang } = useApp();
  const [team, reload] = useLoad(() => gql(TeamDocument), []);
  const [sent, setSent] = useState<{ email: string; url: string | null } | null>(null);
  const action = useAction();
  const { guarded, dialog } = useReauth();
  const change = (fn: () => Promise<unknown>) =>
    void action.run(() =>
      guarded(async () => {
        await fn();
        reload();
      }),
    );
  const invite = (e: Event) => {
    e.preventDefault();
    const form = e.currentTarget as HTMLFormElement;
    const f = new FormData(form);
    const email = String(f.get('email'));
    change(async () => {
      const r = await gql(InviteTeamMemberDocument, { email, role: String(f.get('role')) as TeamRole });
      setSent({ email, url: r.inviteTeamMember.inviteUrl ?? null });
      form.reset();
    });
  };
  return (
    <section>
      <h1>{t.settings}</h1>
      <SettingsTabs current="settings/team" />
      {dialog}
      <ErrorLine error={action.error} />
      <form class="card grid" id="invite" onSubmit={invite} onInput={() => setSent(null)}>
        <label>
          {t.email}
          <input id="invite-email" name="email" type="email" required />
        </label>
        <label>
          {t.role}
          <RoleSelect name="role" id="invite-role" initial="VIEWER" />
        </label>
        <button type="submit" id="invite-submit" disabled={action.busy}>
          {t.invite}
        </button>
        {sent && (
          <p class="muted" id="invite-sent">
            {t.inviteSent(sent.email)}
            {sent.url && (
              <>
                <br />
                {t.inviteLink}: <code>{sent.url}</code>
              </>
            )}
          </p>
        )}
      </form>
      <Show value={team} retry={reload}>
        {({ teamMembers, teamInvites, me }) => (
          <>
            <h2>{t.members}</h2>
            <ul class="plain" id="members">
              {teamMembers.map((m) => (
                <li class="row between" data-member={m.email}>
                  <span class="who">
                    {m.email} {m.userId === me.id && <span class="muted">{t.you}</span>}
                    <br />
                    <span class="muted">{when(m.joinedAt, lang)}</span>
                  </span>
                  <span class="row">
                    <RoleSelect value={m.role} onChange={(role) => change(() => gql(ChangeTeamMemberRoleDocument, { userId: m.userId, role }))} />
                    {m.userId !== me.id && (
                      <button
                        type="button"
                        class="secondary small remove"
                        disabled={action.busy}
                        onClick={() => change(() => gql(RemoveTeamMemberDocument, { userId: m.userId }))}
                      >
                        {t.remove}
                      </button>
                    )}
                  </span>
                </li>
              ))}
            </ul>
            <h2>{t.invites}</h2>
            {teamInvites.length === 0 ? (
              <Empty text={t.noInvites} />
            ) : (
              <ul class="plain" id="invites">
                {teamInvites.map((i) => (
                  <li class="row between" data-invite={i.email}>
                    <span class="who">
                      {i.email} · {t.roles[i.role]} · <span class={`status s-${i.status}`}>{i.status}</span>
                      <br />
                      <span class="muted">
                        {t.expires} {when(i.expiresAt, lang)}
                      </span>
                    </span>
                    <button
                      type="button"
                      class="secondary small revoke"
                      disabled={action.busy}
                      onClick={() => change(() => gql(RevokeTeamInviteDocument, { inviteId: i.id }))}
                    >
                      {t.revoke}
                    </button>
                  </li>
                ))}
              </ul>
            )}
          </>
        )}
      </Show>
    </section>
  );
}
