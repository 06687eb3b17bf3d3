import { scopeInWords } from './launch-scopes';

/**
 * The member pages, server-rendered HTML with no script and no third-party asset: one stylesheet
 * served here, the plan's logo inline (data: URI). Every value is escaped; every form carries the
 * CSRF field `csrf`; every input has a label; the tab order is the reading order.
 */
export interface PlanView {
  name: string;
  logo?: string;
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

function layout(title: string, plan: PlanView | undefined, body: string): string {
  const logo =
    plan?.logo && /^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=]+$/.test(plan.logo)
      ? `<img class="logo" src="${plan.logo}" alt="${escapeHtml(plan.name)} logo">`
      : '';
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}${plan ? ` · ${escapeHtml(plan.name)}` : ''}</title>
<link rel="stylesheet" href="/oauth2/member/style.css">
</head>
<body>
<header>${logo}<span class="plan">${plan ? escapeHtml(plan.name) : ''}</span></header>
<main>
<h1>${escapeHtml(title)}</h1>
${body}
</main>
</body>
</html>
`;
}

function hidden(name: string, value: string): string {
  return `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`;
}

export function errorPage(message: string, plan?: PlanView): string {
  return layout('Cannot continue', plan, `<p role="alert">${escapeHtml(message)}</p>`);
}

export function signInPage(v: {
  plan: PlanView;
  appName?: string;
  tx?: string;
  csrf: string;
  error?: string;
  username?: string;
  /** Set when the plan signs its members in at its own OpenID provider (federated sign-in). */
  federatedStart?: string;
}): string {
  const why = v.appName
    ? `<p><strong>${escapeHtml(v.appName)}</strong> asks to use your ${escapeHtml(v.plan.name)} record. Sign in to decide.</p>`
    : `<p>Sign in to see the apps you connected to your record.</p>`;
  const error = v.error ? `<p class="error" role="alert" id="sign-in-error">${escapeHtml(v.error)}</p>` : '';
  if (v.federatedStart) {
    return layout(
      'Sign in',
      v.plan,
      `${why}${error}<p><a id="federated-sign-in" class="button" href="${escapeHtml(v.federatedStart)}">Sign in with ${escapeHtml(v.plan.name)}</a></p>`,
    );
  }
  const described = v.error ? ' aria-describedby="sign-in-error"' : '';
  return layout(
    'Sign in',
    v.plan,
    `${why}${error}
<form method="post" action="/oauth2/member/sign-in">
${hidden('csrf', v.csrf)}${v.tx ? hidden('tx', v.tx) : ''}
<p><label for="username">Member ID</label>
<input id="username" name="username" autocomplete="username" required value="${escapeHtml(v.username ?? '')}"${described}></p>
<p><label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required${described}></p>
<p><button type="submit">Sign in</button></p>
</form>`,
  );
}

export interface PatientChoice {
  id: string;
  label: string;
}

export function consentPage(v: {
  plan: PlanView;
  appName: string;
  member: string;
  tx: string;
  csrf: string;
  scopes: readonly string[];
  patients: readonly PatientChoice[];
  asksPatient: boolean;
}): string {
  const items = v.scopes
    .map(
      (s, i) => `<li><input type="checkbox" id="scope-${i}" name="scope" value="${escapeHtml(s)}" checked>
<label for="scope-${i}">${escapeHtml(scopeInWords(s))} <code>${escapeHtml(s)}</code></label></li>`,
    )
    .join('\n');
  let patient = '';
  if (v.asksPatient && v.patients.length === 1) {
    patient = `<p>Patient record: <strong>${escapeHtml(v.patients[0].label)}</strong></p>${hidden('patient', v.patients[0].id)}`;
  } else if (v.asksPatient && v.patients.length > 1) {
    patient = `<fieldset><legend>Which patient record may the app use?</legend>
${v.patients
  .map(
    (
      p,
      i,
    ) => `<p><input type="radio" id="patient-${i}" name="patient" value="${escapeHtml(p.id)}"${i === 0 ? ' checked' : ''}>
<label for="patient-${i}">${escapeHtml(p.label)}</label></p>`,
  )
  .join('\n')}
</fieldset>`;
  } else if (v.asksPatient) {
    patient = `<p>Your record holds no patient details yet: the app will not be told a patient.</p>`;
  }
  return layout(
    `Allow ${v.appName}?`,
    v.plan,
    `<p>Signed in as <strong>${escapeHtml(v.member)}</strong> at ${escapeHtml(v.plan.name)}.</p>
<p><strong>${escapeHtml(v.appName)}</strong> asks to:</p>
<form method="post" action="/oauth2/member/consent">
${hidden('csrf', v.csrf)}${hidden('tx', v.tx)}
<fieldset><legend>What the app may do (untick what you do not want to allow)</legend>
<ul class="scopes">
${items}
</ul>
</fieldset>
${patient}
<p><button type="submit" name="decision" value="approve">Allow</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button></p>
</form>
<p><a href="/oauth2/member/apps">Apps you connected</a></p>`,
  );
}

export interface GrantView {
  id: string;
  appName: string;
  scopes: readonly string[];
  created: Date;
}

export function appsPage(v: {
  plan: PlanView;
  member: string;
  csrf: string;
  grants: readonly GrantView[];
  notice?: string;
}): string {
  const notice = v.notice ? `<p role="status">${escapeHtml(v.notice)}</p>` : '';
  const rows =
    v.grants.length === 0
      ? '<p>No app can use your record.</p>'
      : `<ul class="grants">${v.grants
          .map(
            (g) => `<li><h2>${escapeHtml(g.appName)}</h2>
<p>Allowed on <time datetime="${g.created.toISOString()}">${escapeHtml(g.created.toUTCString())}</time>:</p>
<ul>${g.scopes.map((s) => `<li>${escapeHtml(scopeInWords(s))}</li>`).join('')}</ul>
<form method="post" action="/oauth2/member/apps/revoke">
${hidden('csrf', v.csrf)}${hidden('grant', g.id)}
<button type="submit" aria-label="Revoke ${escapeHtml(g.appName)}">Revoke</button>
</form></li>`,
          )
          .join('\n')}</ul>`;
  return layout(
    'Connected apps',
    v.plan,
    `<p>Signed in as <strong>${escapeHtml(v.member)}</strong>.</p>${notice}${rows}`,
  );
}

/** The one stylesheet (served from here: no inline style, no third-party font). */
export const STYLESHEET = `body{font-family:system-ui,sans-serif;margin:0;color:#1b1b1b;background:#f7f7f9}
header{display:flex;align-items:center;gap:.75rem;padding:.75rem 1.5rem;background:#fff;border-bottom:1px solid #ddd}
.logo{max-height:40px;max-width:160px}.plan{font-weight:600}
main{max-width:36rem;margin:2rem auto;padding:1.5rem;background:#fff;border:1px solid #ddd;border-radius:8px}
h1{font-size:1.5rem;margin-top:0}label{font-weight:500}
input:not([type]),input[type=password]{display:block;width:100%;padding:.5rem;font-size:1rem;box-sizing:border-box}
button,.button{font-size:1rem;padding:.5rem 1.25rem;border-radius:4px;border:1px solid #0b5cad;background:#0b5cad;color:#fff;cursor:pointer;text-decoration:none;display:inline-block}
button.secondary{background:#fff;color:#0b5cad}
:focus-visible{outline:3px solid #f2a900;outline-offset:2px}
.error{color:#b00020;font-weight:500}ul.scopes{list-style:none;padding:0}ul.scopes li{margin:.5rem 0}
fieldset{border:1px solid #ccc;border-radius:4px}code{font-size:.8em;color:#555}
`;
