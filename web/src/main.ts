// SPDX-License-Identifier: Apache-2.0
// The app shell: top bar (navigation, time range, live mode, theme), routing from the URL,
// keyboard shortcuts, the profile panel, and the sign-in panel of servers started with --auth-read.
import './style.css';
import { checkToken, clearToken, currentToken, onAuthRequired, storeToken, tokenRemembered } from './api';
import { h } from './dom';
import { findingView } from './finding';
import { fleetView } from './fleet';
import { gpuView } from './gpu_page';
import { hostView } from './host';
import { inferenceView, modelView } from './inference_page';
import { insightsView } from './insights';
import { jobView, jobsView } from './jobs_page';
import { notFoundView, urlProblems } from './not_found';
import { processView } from './process_page';
import { ProfilePanel } from './profile';
import { RANGE_PRESETS, buildUrl, parseUrl, timeWindow } from './state';
import type { ProfileRef, ViewState } from './state';
import { topView } from './top';
import type { View, ViewContext } from './view';

const LIVE_REFRESH_MS = 10_000;

let current: View | null = null;
let panel: ProfilePanel | null = null;
let liveTimer = 0;
let renderSeq = 0;
// Where focus goes back to when the profile panel closes: a selector of the element that had it
// when the panel opened (the view is re-rendered in between).
let panelOpener: FocusRef | null = null;
// Non-null while the server wants a token the UI does not have (or rejected the one it had): the
// sign-in panel replaces the view until the user enters one the server accepts.
let signIn: SignInPanel | null = null;

function theme(): 'light' | 'dark' {
  const saved = localStorage.getItem('warpscope.theme');
  if (saved === 'light' || saved === 'dark') return saved;
  return window.matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

function applyTheme(): void {
  document.documentElement.dataset.theme = theme();
}

function toggleTheme(): void {
  localStorage.setItem('warpscope.theme', theme() === 'dark' ? 'light' : 'dark');
  applyTheme();
  void render();
}

function state(): ViewState {
  return parseUrl(window.location);
}

function navigate(patch: Partial<ViewState>, replace = false): void {
  const next = { ...state(), ...patch };
  if ('from' in patch && patch.from !== undefined) next.range = '';
  const url = buildUrl(next);
  if (url === window.location.pathname + window.location.search) return;
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  void render();
}

function href(patch: Partial<ViewState>): string {
  const s = state();
  const next: ViewState = { ...s, profile: undefined, ...patch };
  if (patch.view && patch.view !== s.view) {
    if (!('expand' in patch)) next.expand = undefined;
    if (!('bgpu' in patch)) next.bgpu = undefined;
    if (!('sort' in patch)) next.sort = undefined;
    if (!('insights' in patch)) next.insights = undefined;
    if (!('process' in patch)) next.process = undefined;
    if (!('gpu' in patch)) next.gpu = undefined;
    if (!('model' in patch)) next.model = undefined;
    if (!('trace' in patch)) next.trace = undefined;
    if (!('job' in patch)) next.job = undefined;
  }
  return buildUrl(next);
}

function context(s: ViewState): ViewContext {
  const w = timeWindow(s);
  return {
    state: s,
    start: w.start,
    end: w.end,
    navigate,
    href,
    openProfile: (ref: ProfileRef) => {
      panelOpener = focusRef(document.activeElement);
      navigate({ profile: ref });
    },
  };
}

function topBar(s: ViewState): HTMLElement {
  const nav = h(
    'nav.mainnav',
    { 'aria-label': 'Main' },
    h('a.brand', { href: href({ view: 'fleet' }) }, h('img', { src: '/favicon.svg', alt: '', width: 22, height: 22 }), 'warpscope'),
    h('a', { href: href({ view: 'fleet' }), 'aria-current': s.view === 'fleet' ? 'page' : undefined, title: 'Fleet overview (f)' }, 'Fleet'),
    h('a', { href: href({ view: 'top' }), 'aria-current': s.view === 'top' ? 'page' : undefined, title: 'Top entities (t)' }, 'Top entities'),
    h('a', { href: href({ view: 'insights' }), 'aria-current': s.view === 'insights' ? 'page' : undefined, title: 'Insights: what is wrong (i)', 'data-testid': 'nav-insights' }, 'Insights'),
    h('a', { href: href({ view: 'inference' }), 'aria-current': s.view === 'inference' ? 'page' : undefined, title: 'Models served across hosts (n)', 'data-testid': 'nav-inference' }, 'Inference'),
    h('a', { href: href({ view: 'jobs' }), 'aria-current': s.view === 'jobs' ? 'page' : undefined, title: 'Distributed training jobs (j)', 'data-testid': 'nav-jobs' }, 'Jobs'),
    s.view === 'job' ? h('span.crumb', { 'aria-current': 'page' }, `Job ${s.job ?? ''}`) : null,
    s.view === 'host' && s.host ? h('span.crumb', { 'aria-current': 'page' }, `Host ${s.host}`) : null,
    (s.view === 'process' || s.view === 'gpu') && s.host ? h('a.crumb', { href: href({ view: 'host', host: s.host, tab: s.view === 'gpu' ? 'gpu' : 'host' }) }, `Host ${s.host}`) : null,
  );
  const presets = h(
    'div.range',
    { role: 'group', 'aria-label': 'Time range' },
    ...RANGE_PRESETS.map((p, i) =>
      h(
        'button.btn',
        {
          type: 'button',
          'aria-pressed': String(s.range === p.id),
          title: `Last ${p.label} (${i + 1})`,
          onclick: () => navigate({ range: p.id, from: undefined, to: undefined }),
        },
        p.id,
      ),
    ),
    customRange(s),
  );
  const live = h(
    'button.btn',
    {
      type: 'button',
      'aria-pressed': String(s.live),
      title: s.from !== undefined ? 'Live mode needs a relative range' : `Refresh every ${LIVE_REFRESH_MS / 1000} s (l)`,
      disabled: s.from !== undefined,
      'data-testid': 'live',
      onclick: () => navigate({ live: !s.live }),
    },
    s.live ? '● Live' : '○ Live',
  );
  const themeBtn = h('button.btn', { type: 'button', title: 'Switch light/dark theme (d)', 'aria-label': 'Switch theme', onclick: toggleTheme }, theme() === 'dark' ? '☀ Light' : '☾ Dark');
  const help = h('button.btn', { type: 'button', title: 'Keyboard shortcuts (?)', 'aria-label': 'Keyboard shortcuts', onclick: showHelp }, '?');
  const signOut = currentToken()
    ? h(
        'button.btn',
        {
          type: 'button',
          title: tokenRemembered() ? 'Forget the access token remembered on this browser' : 'Forget the access token of this tab',
          'data-testid': 'sign-out',
          onclick: () => {
            clearToken();
            showSignIn('', 'Signed out: this browser no longer holds the access token.');
          },
        },
        'Sign out',
      )
    : null;
  return h('header.topbar', {}, nav, h('div.controls', {}, presets, live, themeBtn, help, signOut));
}

function toLocalInput(t: number): string {
  const d = new Date(t * 1000);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

function customRange(s: ViewState): HTMLElement {
  const w = timeWindow(s);
  const from = h('input', { type: 'datetime-local', 'aria-label': 'From', value: toLocalInput(w.start) });
  const to = h('input', { type: 'datetime-local', 'aria-label': 'To', value: toLocalInput(w.end) });
  const error = h('p.error.range-error', { role: 'alert', hidden: true, 'data-testid': 'range-error' });
  const refuse = (message: string) => {
    error.textContent = message;
    error.hidden = false;
    to.setAttribute('aria-invalid', 'true');
    to.focus();
  };
  const form = h(
    'form.custom',
    {
      onsubmit: (e: Event) => {
        e.preventDefault();
        const a = new Date(from.value).getTime() / 1000;
        const b = new Date(to.value).getTime() / 1000;
        if (!Number.isFinite(a) || !Number.isFinite(b)) refuse('Enter both the start and the end of the window.');
        else if (b <= a) refuse('The end of the window must be after its start: swap the two times.');
        else navigate({ from: a, to: b, range: '', live: false });
      },
    },
    from,
    h('span', { 'aria-hidden': 'true' }, '–'),
    to,
    h('button.btn', { type: 'submit' }, 'Apply'),
    error,
  );
  return h('details.customrange', { open: s.from !== undefined }, h('summary.btn', { 'aria-pressed': String(s.from !== undefined) }, 'custom'), form);
}

function showHelp(): void {
  const existing = document.getElementById('help');
  if (existing) {
    existing.remove();
    return;
  }
  const keys: [string, string][] = [
    ['f', 'fleet overview'],
    ['t', 'top entities'],
    ['i', 'insights'],
    ['n', 'inference: models served across hosts'],
    ['j', 'training jobs'],
    ['h / g', 'host page: Host Metrics / GPU Metrics tab'],
    ['1 … 5', 'last 15 min, 1 h, 6 h, 24 h, 7 d'],
    ['l', 'live mode on/off'],
    ['d', 'dark/light theme'],
    ['/', 'search in the flamegraph'],
    ['Esc', 'close the profile panel / this help'],
    ['Tab, Enter', 'move between and open links, tabs, buttons'],
    ['← →', 'switch host tabs'],
  ];
  const dialog = h(
    'div.help',
    { id: 'help', role: 'dialog', 'aria-label': 'Keyboard shortcuts', tabindex: -1 },
    h('h2', {}, 'Keyboard'),
    h('dl', {}, ...keys.flatMap(([k, d]) => [h('dt', {}, h('kbd', {}, k)), h('dd', {}, d)])),
    h('p.muted', {}, 'Drag over a chart to zoom into that window; click a point to open its profile.'),
    h('button.btn', { type: 'button', onclick: () => dialog.remove() }, 'Close'),
  );
  document.body.append(dialog);
  dialog.focus();
}

// The sign-in panel: a labelled password field for the server's read token, a "remember on this
// browser" choice, the server's answer when it refuses the token. The token is checked against
// the server before it is stored; the same panel (and what was typed) survives re-renders.
class SignInPanel {
  readonly el: HTMLElement;
  private readonly input: HTMLInputElement;
  private readonly remember: HTMLInputElement;
  private readonly error: HTMLElement;
  private readonly note: HTMLElement;
  private readonly submit: HTMLButtonElement;

  constructor(onSignedIn: () => void) {
    this.input = h('input', {
      id: 'signin-token',
      type: 'password',
      autocomplete: 'off',
      spellcheck: 'false',
      autocapitalize: 'off',
      'aria-describedby': 'signin-where signin-error',
      'data-testid': 'signin-token',
    });
    this.remember = h('input', { id: 'signin-remember', type: 'checkbox', 'data-testid': 'signin-remember' });
    this.error = h('p.error', { id: 'signin-error', role: 'alert', hidden: true, 'data-testid': 'signin-error' });
    this.note = h('p.muted', { role: 'status' });
    this.submit = h('button.btn.primary', { type: 'submit' }, 'Sign in');
    const form = h(
      'form.signin-form',
      {
        onsubmit: (e: Event) => {
          e.preventDefault();
          void this.trySignIn(onSignedIn);
        },
      },
      h('label', { for: 'signin-token' }, 'Access token'),
      this.input,
      h('div.signin-remember', {}, this.remember, h('label', { for: 'signin-remember' }, 'Remember on this browser')),
      h('p.muted.signin-hint', {}, 'Without it the token is kept for this tab only and forgotten when the tab closes. It is sent in an ', h('code', {}, 'Authorization'), ' header, never in a URL.'),
      this.error,
      h('div', {}, this.submit),
    );
    this.el = h(
      'section.card.signin',
      { 'aria-labelledby': 'signin-title', 'data-testid': 'signin' },
      h('h1', { id: 'signin-title' }, 'Sign in'),
      this.note,
      h('p', {}, 'This server asks for an access token before it shows its data (it runs with ', h('code', {}, '--auth-read'), ').'),
      h(
        'p',
        { id: 'signin-where' },
        'The token is the content of the file given to the server\'s ',
        h('code', {}, '--auth-token-file'),
        '; ',
        h('code', {}, 'warpscope up'),
        ' writes it to ',
        h('code', {}, '<data-dir>/token'),
        '.',
      ),
      form,
    );
  }

  // `error`: the server's answer to the token the UI sent ('' when it sent none).
  show(error: string, note = ''): void {
    this.setError(error);
    this.note.textContent = note;
    this.note.hidden = !note;
  }

  focus(): void {
    this.input.focus();
    if (this.input.value) this.input.select();
  }

  private setError(message: string): void {
    this.error.textContent = message;
    this.error.hidden = !message;
    if (message) this.input.setAttribute('aria-invalid', 'true');
    else this.input.removeAttribute('aria-invalid');
  }

  private async trySignIn(onSignedIn: () => void): Promise<void> {
    const token = this.input.value.trim();
    if (!token) {
      this.setError('Enter the access token.');
      this.focus();
      return;
    }
    this.submit.disabled = true;
    this.el.setAttribute('aria-busy', 'true');
    let problem: string | null;
    try {
      problem = await checkToken(token);
    } catch (e) {
      problem = `Cannot reach the server: ${(e as Error).message}`;
    }
    this.submit.disabled = false;
    this.el.setAttribute('aria-busy', 'false');
    if (problem) {
      this.setError(problem);
      this.focus();
      return;
    }
    storeToken(token, this.remember.checked);
    onSignedIn();
  }
}

// Replaces the view with the sign-in panel (or updates the one shown).
function showSignIn(error: string, note = ''): void {
  const fresh = !signIn;
  if (!signIn) {
    signIn = new SignInPanel(() => {
      signIn = null;
      void render();
    });
  }
  signIn.show(error, note);
  if (fresh || !signIn.el.isConnected) void render();
}

// Every 401 of the API: a request without a token, or with one the server no longer accepts
// (which is then forgotten). Answers to a token since replaced are ignored.
onAuthRequired((message, sentToken) => {
  if (sentToken !== currentToken()) return;
  if (sentToken) clearToken();
  if (signIn?.el.isConnected) return;
  showSignIn(sentToken ? message : '');
});

function setLive(s: ViewState, ctx: ViewContext): void {
  window.clearInterval(liveTimer);
  liveTimer = 0;
  if (!s.live || s.from !== undefined) return;
  liveTimer = window.setInterval(() => {
    if (!current || document.hidden) return;
    const fresh = context(state());
    current.refresh(fresh).catch((e) => console.warn('live refresh failed', e));
  }, LIVE_REFRESH_MS);
  void ctx;
}

const VIEWS: Record<ViewState['view'], (root: HTMLElement, ctx: ViewContext) => Promise<View>> = {
  fleet: fleetView,
  top: topView,
  host: hostView,
  insights: insightsView,
  finding: findingView,
  process: processView,
  gpu: gpuView,
  inference: inferenceView,
  model: modelView,
  jobs: jobsView,
  job: jobView,
  notfound: notFoundView,
};
const TITLES: Partial<Record<ViewState['view'], string>> = {
  fleet: 'Fleet',
  top: 'Top entities',
  insights: 'Insights',
  finding: 'Finding',
  process: 'Process',
  gpu: 'GPU',
  inference: 'Inference',
  jobs: 'Jobs',
  notfound: 'Not found',
};

const FOCUSABLE = 'a[href], button, input, select, textarea, [tabindex]';

// How to find the element again after a re-render: its id, else the n-th focusable element of
// its closest [data-testid] container.
interface FocusRef {
  selector: string;
  index: number;
}

function focusRef(el: Element | null): FocusRef | null {
  if (!el || el === document.body) return null;
  if (el.id) return { selector: `#${CSS.escape(el.id)}`, index: -1 };
  const box = el.closest('[data-testid]');
  if (!box) return null;
  const t = box.getAttribute('data-testid')!;
  return { selector: `[data-testid="${CSS.escape(t)}"]`, index: [...box.querySelectorAll(FOCUSABLE)].indexOf(el) };
}

// Back from the profile panel: the element that opened it, else its container, else the view.
function restoreFocus(ref: FocusRef | null): void {
  const box = ref ? document.querySelector<HTMLElement>(ref.selector) : null;
  const inside = box ? [...box.querySelectorAll<HTMLElement>(FOCUSABLE)] : [];
  const target = ref && ref.index < 0 ? box : (inside[ref?.index ?? 0] ?? inside[0]);
  (target ?? document.getElementById('main'))?.focus();
}

async function render(): Promise<void> {
  const seq = ++renderSeq;
  const t0 = performance.now();
  // Where a view's lazily loaded parts measure their completion from (lazy_loads.ts).
  performance.mark('warpscope:render');
  const s = state();
  const ctx = context(s);
  current?.destroy();
  current = null;
  const wasPanel = panel !== null;
  panel?.destroy();
  panel = null;
  const app = document.getElementById('app')!;
  const main = h('main', { id: 'main', tabindex: -1, 'aria-busy': 'true' });
  if (signIn) {
    app.replaceChildren(h('a.skip', { href: '#main' }, 'Skip to content'), topBar(s), main);
    window.clearInterval(liveTimer);
    liveTimer = 0;
    document.title = 'Sign in · warpscope';
    main.append(signIn.el);
    main.setAttribute('aria-busy', 'false');
    signIn.focus();
    document.body.dataset.ready = String(seq);
    return;
  }
  document.title = TITLES[s.view] ? `${TITLES[s.view]} · warpscope` : `${s.view === 'model' ? s.model : s.view === 'job' ? `Job ${s.job}` : s.host} · warpscope`;
  if (s.problems?.length) main.append(urlProblems(s.problems));
  // The view starts before the page around it is built: its requests go out first (building the
  // top bar and the layout it brings took 10-20 ms before them).
  const building = VIEWS[s.view](main, ctx);
  app.replaceChildren(h('a.skip', { href: '#main' }, 'Skip to content'), topBar(s), main);
  try {
    const view = await building;
    if (seq !== renderSeq) {
      view.destroy();
      return;
    }
    current = view;
  } catch (e) {
    if (seq !== renderSeq) return;
    main.append(h('p.error', { role: 'alert' }, `Cannot load this view: ${(e as Error).message}`));
  }
  main.setAttribute('aria-busy', 'false');
  if (s.profile && s.view === 'host' && s.host) {
    panel = new ProfilePanel({
      host: s.host,
      ref: s.profile,
      onChange: (ref) => navigate({ profile: ref }, true),
      onClose: () => navigate({ profile: undefined }),
    });
    app.append(panel.el);
    panel.el.scrollIntoView({ block: 'start' });
    // Keyboard users land in the panel (not at the top of the page behind it).
    if (!panel.el.hasAttribute('tabindex')) panel.el.setAttribute('tabindex', '-1');
    if (!panel.el.contains(document.activeElement)) panel.el.focus({ preventScroll: true });
  } else if (panelOpener !== null || wasPanel) {
    restoreFocus(panelOpener);
    panelOpener = null;
  }
  setLive(s, ctx);
  // For bench/ui_load.mjs: the time from the start of a view's render (fetches included) to its
  // charts drawn; how many charts it drew, its detail.
  performance.measure(`warpscope:view:${s.view}${s.view === 'host' ? ':' + s.tab : ''}`, { start: t0, detail: { charts: main.querySelectorAll('.chart canvas').length } });
  document.body.dataset.ready = String(seq);
}

function onKey(e: KeyboardEvent): void {
  const target = e.target as HTMLElement;
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  if (target && (target.tagName === 'INPUT' || target.tagName === 'SELECT' || target.tagName === 'TEXTAREA')) {
    if (e.key === 'Escape') target.blur();
    return;
  }
  const s = state();
  switch (e.key) {
    case 'f':
      navigate({ view: 'fleet', profile: undefined });
      break;
    case 't':
      navigate({ view: 'top', profile: undefined });
      break;
    case 'i':
      navigate({ view: 'insights', profile: undefined });
      break;
    case 'n':
      navigate({ view: 'inference', profile: undefined });
      break;
    case 'j':
      navigate({ view: 'jobs', profile: undefined });
      break;
    case 'h':
    case 'g':
      if (s.view === 'host') navigate({ tab: e.key === 'g' ? 'gpu' : 'host', expand: undefined });
      break;
    case 'l':
      if (s.from === undefined) navigate({ live: !s.live });
      break;
    case 'd':
      toggleTheme();
      break;
    case '?':
      showHelp();
      break;
    case '/': {
      const search = document.querySelector<HTMLInputElement>('[data-testid=flame-search]');
      if (search) {
        e.preventDefault();
        search.focus();
      }
      break;
    }
    case 'Escape':
      if (document.getElementById('help')) document.getElementById('help')!.remove();
      else if (s.profile) navigate({ profile: undefined });
      break;
    default:
      if (/^[1-5]$/.test(e.key)) {
        navigate({ range: RANGE_PRESETS[Number(e.key) - 1].id, from: undefined, to: undefined });
      }
  }
}

// Links inside the app change the URL without reloading the page.
function onClick(e: MouseEvent): void {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = (e.target as HTMLElement).closest('a');
  if (!a || a.target || a.hasAttribute('download')) return;
  const url = new URL(a.href, window.location.href);
  if (url.origin !== window.location.origin || url.pathname.startsWith('/api/')) return;
  if (url.hash && url.pathname === window.location.pathname && url.search === window.location.search) return;
  if (url.hash) return;
  e.preventDefault();
  if (url.pathname + url.search !== window.location.pathname + window.location.search) {
    history.pushState(null, '', url.pathname + url.search);
    void render();
  }
}

applyTheme();
window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => {
  if (!localStorage.getItem('warpscope.theme')) {
    applyTheme();
    void render();
  }
});
window.addEventListener('popstate', () => void render());
document.addEventListener('keydown', onKey);
document.addEventListener('click', onClick);
void render();
