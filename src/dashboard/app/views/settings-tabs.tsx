import { useApp } from '../ui';

const TABS = [
  ['settings', 'general'],
  ['settings/team', 'team'],
  ['settings/two-factor', 'twoFactor'],
] as const;

/** The Settings sub-sections: general, the team and two-factor sign-in. */
export function SettingsTabs({ current }: { current: (typeof TABS)[number][0] }) {
  const { t } = useApp();
  return (
    <div class="tabs row" role="navigation" aria-label={t.settings}>
      {TABS.map(([route, word]) => (
        <a href={`#/${route}`} id={`tab-${word}`} aria-current={route === current ? 'page' : undefined}>
          {t[word]}
        </a>
      ))}
    </div>
  );
}
