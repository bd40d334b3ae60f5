// The dashboard end to end, in order: each step builds on the state the previous ones left.
// Run by crates/dnz/tests/dashboard.rs (see README.md); add steps before `done()`.

import assert from 'node:assert/strict';
import { control, done, env, launch, poll, shot, step } from './harness.mjs';

let page;
const { superadmin, viewer } = env.users;
const ZONE = 'shop.test';
const NAME = `www.${ZONE}`;
// A German network in the DB-IP database the test serves.
const GERMAN = '80.128.0.1';
const GERMAN_NET = '80.128.0.0/24';

const go = (path) => page.goto(`${env.url}/#${path}`);
const row = (value) => page.locator(`tr[data-value="${value}"]`);
const health = (value) => row(value).locator('.steering-cell .dot').getAttribute('data-health');

// Every visible control has a name a screen reader can read.
async function assertLabelled() {
  const unlabelled = await page.evaluate(() =>
    [...document.querySelectorAll('input, select, textarea, button')]
      .filter((el) => el.getClientRects().length > 0)
      .filter((el) => !(el.labels && el.labels.length))
      .filter((el) => !el.getAttribute('aria-label') && !el.getAttribute('aria-labelledby'))
      .filter((el) => !(el.tagName === 'BUTTON' && el.textContent.trim()))
      .map((el) => el.outerHTML.slice(0, 120)),
  );
  assert.deepEqual(unlabelled, [], 'controls without a label');
  // And no value leaked into the page unrendered.
  const text = await page.evaluate(() => document.body.innerText);
  assert.doesNotMatch(text, /\[object |\bundefined\b|^null$|NaN/m);
}

async function login(user) {
  await go('/login');
  await page.getByLabel('User name').fill(user.name);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: 'Zones', exact: true }).waitFor();
}

async function digSubnet(subnet) {
  const reply = await control(`dig-subnet ${NAME} A ${subnet}`);
  return [...reply.answers].sort();
}

function steeringDialog(value) {
  return page.getByRole('button', { name: `Traffic steering for www A ${value}` }).click();
}

step('browser starts', async () => {
  ({ page } = await launch());
});

step('a wrong password is refused with the server message', async () => {
  await go('/zones');
  // Not logged in: the dashboard sends us to the login page.
  await page.getByRole('heading', { name: 'Log in to dnz' }).waitFor();
  await assertLabelled();
  await shot(page, 'login');
  await page.getByLabel('User name').fill(superadmin.name);
  await page.getByLabel('Password').fill('not the password');
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.locator('.form-error', { hasText: 'wrong user name or password' }).waitFor();
});

step('log in as superadmin with a session cookie', async () => {
  await login(superadmin);
  const cookies = await page.context().cookies();
  const session = cookies.find((c) => c.name === 'dnz_session');
  assert.ok(session, 'session cookie set');
  assert.equal(session.httpOnly, true);
  assert.equal(session.sameSite, 'Strict');
  // The page's script cannot read it.
  assert.equal(await page.evaluate(() => document.cookie.includes('dnz_session')), false);
});

step('GeoIP: download from a local URL, then look up a German address', async () => {
  await go('/settings/geoip');
  await page.getByRole('heading', { name: 'GeoIP database' }).waitFor();
  await page.getByLabel('Download URL').fill(env.geoipUrl);
  await page.getByRole('button', { name: 'Save source' }).click();
  await page.locator('#toast', { hasText: 'Source saved' }).waitFor();
  await page.getByRole('button', { name: 'Download', exact: true }).click();
  await page.locator('#toast', { hasText: 'downloaded and loaded' }).waitFor({ timeout: 60_000 });
  await page.getByLabel('IP address').fill(GERMAN);
  await page.getByRole('button', { name: 'Look up' }).click();
  await page.locator('[data-country="DE"]').waitFor();
  await page.getByText('CC BY 4.0').waitFor();
  await assertLabelled();
  await shot(page, 'geoip');
});

step('create a zone', async () => {
  await go('/zones');
  await page.getByRole('button', { name: 'Create zone' }).click();
  const dialog = page.getByRole('dialog', { name: 'Create zone' });
  await dialog.getByLabel('Zone name').fill(ZONE);
  await dialog.getByRole('button', { name: 'Create', exact: true }).click();
  await page.getByRole('heading', { name: ZONE, exact: true }).waitFor();
});

step('add records; a bad value shows the server message beside the field', async () => {
  const form = page.getByRole('form', { name: 'Add a record' });
  await form.getByLabel('Name').fill('www');
  await form.getByLabel('Type').selectOption('A');
  await form.getByLabel('Value').fill('not-an-address');
  await form.getByRole('button', { name: 'Add record' }).click();
  const message = form.locator('[data-field="value"] .field-error');
  await message.waitFor();
  assert.match(await message.textContent(), /not-an-address|address|IPv4/i);
  assert.equal(await form.getByLabel('Value').getAttribute('aria-invalid'), 'true');
  // Nothing typed is lost.
  assert.equal(await form.getByLabel('Name').inputValue(), 'www');
  await shot(page, 'record-error');

  for (const value of ['127.0.0.1', '127.0.0.2']) {
    await form.getByLabel('Value').fill(value);
    await form.getByRole('button', { name: 'Add record' }).click();
    await row(value).waitFor();
  }
  assert.equal(await message.isVisible(), false, 'the old error is cleared');
});

step('Traffic steering: countries, weight, an HTTPS check, Test now', async () => {
  await steeringDialog('127.0.0.1');
  const dialog = page.getByRole('dialog');
  await dialog.getByLabel('Search countries').fill('germ');
  await dialog.getByLabel('Germany (DE)').check();
  // Enter picks the exact code.
  await dialog.getByLabel('Search countries').fill('FR');
  await dialog.getByLabel('Search countries').press('Enter');
  await dialog.getByRole('list', { name: 'Chosen countries' }).getByText('FR').waitFor();
  await dialog.getByLabel('Weight').fill('3');
  await dialog.getByLabel('Check', { exact: true }).selectOption('https');
  await dialog.getByLabel('Port', { exact: true }).fill(String(env.originPort));
  await dialog.getByLabel('Path', { exact: true }).fill('/health');
  await dialog.getByLabel('Interval (s)').fill('1');
  await dialog.getByLabel('Timeout (ms)').fill('500');
  await dialog.getByLabel('Down after failures').fill('2');
  await dialog.getByLabel('Up after passes').fill('2');
  await dialog.getByRole('button', { name: 'Test now' }).click();
  const verdict = dialog.locator('[data-verdict]');
  await verdict.waitFor();
  assert.equal(await verdict.getAttribute('data-verdict'), 'healthy', await verdict.textContent());
  assert.match(await verdict.textContent(), /200/);
  assert.match(await verdict.textContent(), /\d+ ms/);
  await assertLabelled();
  await shot(page, 'steering-dialog');
});

step('a bad weight shows the server message beside Weight and keeps the dialog as typed', async () => {
  const dialog = page.getByRole('dialog');
  await dialog.getByLabel('Weight').fill('-5');
  await dialog.getByRole('button', { name: 'Save', exact: true }).click();
  const message = dialog.locator('[data-field="steering.weight"] .field-error');
  await message.waitFor();
  assert.match(await message.textContent(), /out of range/);
  assert.equal(await dialog.getByLabel('Germany (DE)').isChecked(), true);
  assert.equal(await dialog.getByLabel('Port', { exact: true }).inputValue(), String(env.originPort));
});

step('save: the record gets a steering badge and a green dot', async () => {
  const dialog = page.getByRole('dialog');
  await dialog.getByLabel('Weight').fill('3');
  await dialog.getByRole('button', { name: 'Save', exact: true }).click();
  await dialog.waitFor({ state: 'detached' });
  const badge = row('127.0.0.1').locator('.badge');
  assert.match(await badge.textContent(), /DE, FR · weight 3 · https/);
  await poll('green dot', async () => (await health('127.0.0.1')) === 'up', { timeout: 10_000 });
});

step('the second address becomes the backup; dig from Germany gets the primary', async () => {
  await steeringDialog('127.0.0.2');
  const dialog = page.getByRole('dialog');
  await dialog.getByLabel(/^Backup/).check();
  await dialog.getByRole('button', { name: 'Save', exact: true }).click();
  await dialog.waitFor({ state: 'detached' });
  await row('127.0.0.2').locator('.badge', { hasText: 'backup' }).waitFor();
  assert.deepEqual(await digSubnet(GERMAN_NET), ['127.0.0.1']);
  await shot(page, 'records');
});

step('the keyboard opens and closes the dialog and focus returns', async () => {
  const opener = page.getByRole('button', { name: 'Traffic steering for www A 127.0.0.1' });
  await opener.focus();
  await page.keyboard.press('Enter');
  const dialog = page.getByRole('dialog');
  await dialog.waitFor();
  // Focus starts inside the dialog.
  assert.equal(await page.evaluate(() => !!document.activeElement.closest('dialog')), true);
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'detached' });
  assert.equal(await page.evaluate(() => document.activeElement.getAttribute('aria-label')), 'Traffic steering for www A 127.0.0.1');
});

step('stop the origin: the dot turns red within the check window and dig changes', async () => {
  const stopped = Date.now();
  await control('stop-origin');
  // Interval 1 s, down after 2: the state flips within 1 × (2 + 1) s; the page polls every 2 s.
  await poll('red dot', async () => (await health('127.0.0.1')) === 'down', { timeout: 15_000, interval: 200 });
  const took = Date.now() - stopped;
  console.log(`red after ${took} ms`);
  assert.ok(took <= 3_000 + 2_000 + 1_500, `red after ${took} ms`);
  await row('127.0.0.1').locator('.reason').waitFor();
  assert.deepEqual(await digSubnet(GERMAN_NET), ['127.0.0.2']);
  await shot(page, 'records-down');
});

step('the topology shows one Origin node per address in its health colour', async () => {
  await go('/topology');
  const origin = (address) => page.locator(`g.node.origin[data-address="${address}"]`);
  await origin('127.0.0.1').waitFor();
  assert.equal(await origin('127.0.0.1').getAttribute('data-health'), 'down');
  assert.equal(await origin('127.0.0.2').count(), 1);
  assert.equal(await page.locator('g.node.origin').count(), 2);
  assert.equal(await page.locator('g.node.place[data-id="country:DE"]').count(), 1);
  assert.equal(await page.locator('g.node.name').count(), 1);
  // Its fill really is red.
  const fill = await origin('127.0.0.1').locator('circle.health').evaluate((c) => getComputedStyle(c).fill);
  assert.equal(fill, 'rgb(220, 38, 38)');
});

step('the health check log lists the change with its reason', async () => {
  await go(`/zones/${ZONE}`);
  await row('127.0.0.1').getByRole('link', { name: 'Health log' }).click();
  await page.getByRole('heading', { name: /Health log/ }).waitFor();
  await page.locator('tbody tr', { hasText: 'down' }).first().waitFor();
  await shot(page, 'health-log');
});

step('start the origin again: the dot turns green and dig follows', async () => {
  await go(`/zones/${ZONE}`);
  await control('start-origin');
  await poll('green dot again', async () => (await health('127.0.0.1')) === 'up', { timeout: 15_000 });
  await poll('primary answers again', async () => (await digSubnet(GERMAN_NET)).join() === '127.0.0.1', { timeout: 5_000 });
});

step('Remove steering keeps the record', async () => {
  await steeringDialog('127.0.0.2');
  const dialog = page.getByRole('dialog');
  await dialog.getByRole('button', { name: 'Remove steering' }).click();
  await dialog.waitFor({ state: 'detached' });
  await poll('badge gone', async () => (await row('127.0.0.2').locator('.badge').count()) === 0);
  assert.equal(await row('127.0.0.2').count(), 1);
  assert.equal(await row('127.0.0.1').locator('.badge').count(), 1);
});

step('edit a record: the TTL changes and the steering of another stays', async () => {
  await row('127.0.0.2').getByRole('button', { name: 'Edit www A 127.0.0.2' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByLabel('TTL (s)').fill('120');
  await dialog.getByRole('button', { name: 'Save', exact: true }).click();
  await dialog.waitFor({ state: 'detached' });
  await poll('new TTL', async () => (await row('127.0.0.2').locator('td').nth(2).textContent()) === '120');
  assert.equal(await row('127.0.0.1').locator('.badge').count(), 1);
});

step('import a zone file: a bad file lists its lines and changes nothing, a good one lands', async () => {
  await go('/zones');
  await page.getByRole('button', { name: 'Import zone file' }).click();
  const dialog = page.getByRole('dialog', { name: 'Import zone file' });
  await dialog.getByLabel('Zone name').fill('imported.test');
  const bad = ['$ORIGIN imported.test.', '$TTL 300', '@ NS ns.example.net.', 'www A 192.0.2.7', 'mail A 300.1.2.3', 'txt TXT "ok"', 'x BOGUS 1'].join('\n');
  await dialog.getByLabel('Contents').fill(bad);
  await dialog.getByRole('button', { name: 'Import', exact: true }).click();
  const error = dialog.locator('.form-error');
  await error.waitFor();
  const text = await error.textContent();
  assert.match(text, /line 5/);
  assert.match(text, /line 7/);
  assert.equal((await page.request.get(`${env.url}/api/v1/zones/imported.test`)).status(), 404);
  await dialog.getByLabel('Contents').fill(bad.replace('300.1.2.3', '192.0.2.8').replace('x BOGUS 1', 'x AAAA 2001:db8::8'));
  await dialog.getByRole('button', { name: 'Import', exact: true }).click();
  await page.getByRole('heading', { name: 'imported.test', exact: true }).waitFor();
  await row('192.0.2.8').waitFor();
  await row('2001:db8::8').waitFor();
  const reply = await control('dig mail.imported.test A');
  assert.deepEqual(reply.answers, ['192.0.2.8']);
});

step('load balancing: a pool with a checked origin and a load balancer', async () => {
  await go('/load-balancing');
  await page.getByRole('heading', { name: 'Load balancing' }).waitFor();
  await page.getByRole('button', { name: 'Create pool' }).click();
  let dialog = page.getByRole('dialog');
  await dialog.getByLabel('Pool name').fill('eu');
  await dialog.getByRole('button', { name: 'Create', exact: true }).click();
  await dialog.waitFor({ state: 'detached' });
  await page.getByRole('button', { name: 'Add origin to eu' }).click();
  dialog = page.getByRole('dialog');
  await dialog.getByLabel('Address').fill('127.0.0.1');
  await dialog.getByLabel('Weight').fill('2');
  await dialog.getByLabel('Check', { exact: true }).selectOption('tcp');
  await dialog.getByLabel('Port', { exact: true }).fill(String(env.originPort));
  await dialog.getByLabel('Interval (s)').fill('1');
  await dialog.getByLabel('Timeout (ms)').fill('500');
  await dialog.getByRole('button', { name: 'Save', exact: true }).click();
  await dialog.waitFor({ state: 'detached' });
  await page.getByRole('button', { name: 'Create load balancer' }).click();
  dialog = page.getByRole('dialog');
  await dialog.getByLabel('Name', { exact: true }).fill('lb');
  await dialog.getByLabel('Default pools, in order').fill('eu');
  await dialog.getByRole('button', { name: 'Create', exact: true }).click();
  await dialog.waitFor({ state: 'detached' });
  await page.getByRole('cell', { name: `lb.${ZONE}` }).waitFor();
  await poll('origin up', async () => (await page.locator('[data-origin] .dot').getAttribute('data-health')) === 'up', { timeout: 10_000 });
  await page.getByRole('button', { name: 'Check origins of eu now' }).click();
  await page.locator('.test-result li', { hasText: 'healthy' }).waitFor();
  await assertLabelled();
  await shot(page, 'load-balancing');
});

step('the topology draws the load balancer beside the steered name', async () => {
  await go('/topology');
  await page.locator('g.node.name.lb').waitFor();
  assert.equal(await page.locator('g.node.origin[data-address="127.0.0.1"]').getAttribute('data-health'), 'up');
  // 127.0.0.1 is both a steered address and a pool origin: still one node.
  assert.equal(await page.locator('g.node.origin[data-address="127.0.0.1"]').count(), 1);
  await shot(page, 'topology');
});

step('explain shows the decision for a German client', async () => {
  await go('/explain');
  await page.getByLabel('Name').fill(NAME);
  await page.getByLabel('Client address').fill(GERMAN);
  await page.getByRole('button', { name: 'Explain', exact: true }).click();
  await page.locator('pre.answer', { hasText: '127.0.0.1' }).waitFor();
  assert.ok((await page.locator('ol.steps li').count()) > 0);
  await page.getByText('DE', { exact: false }).first().waitFor();
  await assertLabelled();
  await shot(page, 'explain');
});

step('users and tokens: a new token is shown once', async () => {
  await go('/settings/users');
  await page.getByRole('heading', { name: 'Users and API tokens' }).waitFor();
  await page.getByLabel('Token name').fill('deploy');
  await page.getByRole('button', { name: 'Create token' }).click();
  const token = page.locator('#new-token');
  await token.waitFor();
  assert.match(await token.inputValue(), /^dnz_[0-9a-f]{64}$/);
  await page.getByRole('cell', { name: 'deploy', exact: true }).waitFor();
  await assertLabelled();
  await shot(page, 'users');
  await go('/zones');
  await page.getByRole('link', { name: ZONE }).waitFor();
  await shot(page, 'zones');
});

step('the topology stays readable with 50 origins', async () => {
  // Through the API from the page, as the dashboard itself would: 5 names × 10 addresses over
  // 8 countries, so edges cross columns.
  const created = await page.evaluate(async () => {
    const s = await (await fetch('/api/v1/session')).json();
    const call = (method, path, body) =>
      fetch(`/api/v1${path}`, {
        method,
        headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': s.csrf },
        body: JSON.stringify(body),
      }).then((r) => r.status);
    const statuses = [await call('POST', '/zones', { name: 'big.test' })];
    const countries = ['DE', 'FR', 'US', 'JP', 'BR', 'IN', 'AU', 'ZA'];
    for (let n = 0; n < 50; n++) {
      const steering = { countries: [countries[n % 8]], weight: 1 + (n % 3) };
      statuses.push(
        await call('POST', '/zones/big.test/records', { name: `app${n % 5}`, type: 'A', value: `192.0.2.${n + 10}`, steering }),
      );
    }
    return statuses;
  });
  assert.deepEqual([...new Set(created)], [201], JSON.stringify(created));
  await go('/topology');
  await poll('50 more origins', async () => (await page.locator('g.node.origin').count()) === 52);
  // No two nodes overlap and every label fits its box.
  const problems = await page.evaluate(() => {
    const boxes = [...document.querySelectorAll('g.node')].map((g) => ({ id: g.dataset.id, r: g.querySelector('rect').getBoundingClientRect(), t: g.querySelector('text').getBoundingClientRect() }));
    const out = [];
    for (const [i, a] of boxes.entries()) {
      if (a.t.right > a.r.right + 0.5) out.push(`${a.id}: label wider than its box`);
      for (const b of boxes.slice(i + 1)) {
        if (a.r.left < b.r.right && b.r.left < a.r.right && a.r.top < b.r.bottom && b.r.top < a.r.bottom) out.push(`${a.id} overlaps ${b.id}`);
      }
    }
    return out;
  });
  assert.deepEqual(problems, []);
  await shot(page, 'topology-50');
});

step('a viewer sees steering but cannot Save or add records', async () => {
  await page.getByRole('button', { name: 'Log out' }).click();
  await page.getByRole('heading', { name: 'Log in to dnz' }).waitFor();
  await login(viewer);
  assert.equal(await page.getByRole('link', { name: 'Settings' }).count(), 0);
  await go(`/zones/${ZONE}`);
  await row('127.0.0.1').waitFor();
  assert.equal(await page.getByRole('form', { name: 'Add a record' }).count(), 0);
  assert.equal(await page.getByRole('button', { name: /^Delete/ }).count(), 0);
  await steeringDialog('127.0.0.1');
  const dialog = page.getByRole('dialog');
  await dialog.getByText('Viewers can look but not change steering.').waitFor();
  assert.equal(await dialog.getByRole('button', { name: 'Save' }).count(), 0);
  assert.equal(await dialog.getByRole('button', { name: 'Test now' }).count(), 0);
  assert.equal(await dialog.getByLabel('Germany (DE)').isChecked(), true);
  await shot(page, 'viewer');
  await page.keyboard.press('Escape');
  // The server refuses the viewer's writes too, whatever the page shows.
  const status = await page.evaluate(async () => {
    const s = await (await fetch('/api/v1/session')).json();
    const r = await fetch('/api/v1/zones', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': s.csrf },
      body: JSON.stringify({ name: 'viewer.test' }),
    });
    return r.status;
  });
  assert.equal(status, 403);
});

await done();
