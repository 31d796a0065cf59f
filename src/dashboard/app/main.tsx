import { render } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { currentSession, gql, onSession, refresh, setSession } from './api';
import { LogoutDocument, type Environment } from './documents';
import { initialLang, WORDS, type Lang } from './i18n';
import { AppContext, type Ctx } from './ui';
import { Developers } from './views/developers';
import { Home } from './views/home';
import { Invite } from './views/invite';
import { Links } from './views/links';
import { OrderPage } from './views/order';
import { Orders } from './views/orders';
import { Settings } from './views/settings';
import { Settlement } from './views/settlement';
import { SignIn } from './views/sign-in';
import { Team } from './views/team';
import { TwoFactor } from './views/two-factor';

const SECTIONS = ['home', 'orders', 'links', 'settlement', 'developers', 'settings'] as const;

const routeNow = () => location.hash.replace(/^#\/?/, '') || 'home';

function useRoute(): [string, (r: string) => void] {
  const [route, setRoute] = useState(routeNow);
  useEffect(() => {
    const on = () => setRoute(routeNow());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return [route, (r) => (location.hash = `#/${r}`)];
}

function Screen({ route }: { route: string }) {
  const [section, ...rest] = route.split('/');
  switch (section) {
    case 'orders':
      return <Orders />;
    case 'order':
      return <OrderPage orderNo={decodeURIComponent(rest.join('/'))} />;
    case 'links':
      return <Links />;
    case 'settlement':
      return <Settlement />;
    case 'developers':
      return <Developers />;
    case 'settings':
      return rest[0] === 'team' ? <Team /> : rest[0] === 'two-factor' ? <TwoFactor /> : <Settings />;
    default:
      return <Home />;
  }
}

/**
 * The shell: the environment switch (sandbox ↔ production, always visible), language, sign-out and
 * the sections (or the invite screen, opened from an invite link); the access token is refreshed a minute before it expires.
 */
function App() {
  const [signedIn, setSignedIn] = useState(currentSession() !== null);
  // An invite link (/dashboard/invite#token=…) shows the invite screen until its invitee signs in.
  const [inviting, setInviting] = useState(() => /\/invite\/?$/.test(location.pathname));
  const [lang, setLang] = useState<Lang>(initialLang);
  const [env, setEnv] = useState<Environment>(() => (localStorage.getItem('cpg.dashboard.env') === 'PRODUCTION' ? 'PRODUCTION' : 'SANDBOX'));
  const [route, go] = useRoute();
  const [menu, setMenu] = useState(false);
  const t = WORDS[lang];
  const ctx = useMemo<Ctx>(() => ({ lang, env, t, go }), [lang, env, t]);

  useEffect(
    () =>
      onSession((s) => {
        setSignedIn(s !== null);
        if (s && inviting) {
          setInviting(false);
          // Out of the address (and history): the spent token; the hash change routes to Home.
          history.replaceState(null, '', '/dashboard');
          go('home');
        }
      }),
    [inviting],
  );
  useEffect(() => {
    document.documentElement.lang = lang;
    document.title = `${t.title} · ${env === 'SANDBOX' ? t.sandbox : t.production}`;
  }, [lang, env]);
  useEffect(() => {
    if (!signedIn) return;
    const schedule = () => {
      const s = currentSession();
      const ms = s ? Math.max(5_000, new Date(s.expiresAt).getTime() - Date.now() - 60_000) : 60_000;
      return setTimeout(() => void refresh().then(() => (timer = schedule())), ms);
    };
    let timer = schedule();
    return () => clearTimeout(timer);
  }, [signedIn]);

  const switchLang = () => {
    const next = lang === 'id' ? 'en' : 'id';
    localStorage.setItem('cpg.dashboard.lang', next);
    setLang(next);
  };
  const switchEnv = (e: Environment) => {
    localStorage.setItem('cpg.dashboard.env', e);
    setEnv(e);
  };
  const signOut = async () => {
    await gql(LogoutDocument).catch(() => {});
    setSession(null);
  };
  const section = route.split('/')[0] === 'order' ? 'orders' : route.split('/')[0];

  return (
    <AppContext.Provider value={ctx}>
      <header class={`top env-${env}`}>
        <strong class="brand">{t.title}</strong>
        <div class="env" role="group" aria-label="Environment">
          {(['SANDBOX', 'PRODUCTION'] as const).map((e) => (
            <button type="button" id={`env-${e}`} aria-pressed={env === e} class={env === e ? 'on' : ''} onClick={() => switchEnv(e)}>
              {e === 'SANDBOX' ? t.sandbox : t.production}
            </button>
          ))}
        </div>
        <button type="button" id="lang" class="secondary small" onClick={switchLang}>
          {t.lang}
        </button>
        {signedIn && !inviting && (
          <>
            <button type="button" id="menu" class="secondary small only-phone" aria-expanded={menu} onClick={() => setMenu(!menu)}>
              ☰
            </button>
            <button type="button" id="sign-out" class="secondary small" onClick={() => void signOut()}>
              {t.signOut}
            </button>
          </>
        )}
      </header>
      {inviting ? (
        <main id="view">
          <Invite />
        </main>
      ) : signedIn ? (
        <div class="layout">
          <nav class={menu ? 'open' : ''} onClick={() => setMenu(false)}>
            {SECTIONS.map((s) => (
              <a href={`#/${s}`} id={`nav-${s}`} aria-current={section === s ? 'page' : undefined}>
                {t[s]}
              </a>
            ))}
          </nav>
          <main id="view">
            <Screen route={route} />
          </main>
        </div>
      ) : (
        <main id="view">
          <SignIn />
        </main>
      )}
    </AppContext.Provider>
  );
}

const root = document.getElementById('app')!;
root.textContent = ''; // the shell's placeholder
render(<App />, root);
