// Appended to Swagger UI's bundle on /docs (src/routes/docs.ts). Every /api/v1 route needs two
// headers, which Swagger UI shows as two security schemes, each with its own Authorize button in
// its dialog: pressing one sent one header and every try answered 401. Here one step authorizes
// both: a bar above the page (organization id + key, one button), and in the dialog, pressing
// Authorize on either scheme also authorizes every other scheme whose field is filled.
(() => {
  const bundle = window.SwaggerUIBundle;
  if (typeof bundle !== 'function') return;

  /** The values typed into the dialog's fields, by scheme name. */
  function typedInDialog() {
    const typed = {};
    for (const container of document.querySelectorAll('.auth-container')) {
      const name = container.querySelector('h4 code')?.textContent?.trim();
      const input = container.querySelector('input');
      if (name && input?.value) typed[name] = input.value;
    }
    return typed;
  }

  const BothHeaders = (system) => ({
    statePlugins: {
      auth: {
        wrapActions: {
          authorize: (authorize) => (payload) => {
            const definitions = system.specSelectors.securityDefinitions();
            const all = { ...payload };
            for (const [name, value] of Object.entries(typedInDialog())) {
              if (!all[name] && definitions?.get(name)?.get('type') === 'apiKey') all[name] = { name, schema: definitions.get(name), value };
            }
            return authorize(all);
          },
        },
      },
    },
  });

  window.SwaggerUIBundle = Object.assign((options) => bundle({ ...options, plugins: [...(options.plugins ?? []), BothHeaders] }), bundle);

  function signInBar() {
    const form = document.createElement('form');
    form.id = 'sign-in';
    form.style.cssText =
      'display:flex;gap:.5rem;align-items:center;flex-wrap:wrap;padding:.6rem 1rem;background:#f3f4f6;font:14px sans-serif;border-bottom:1px solid #d1d5db';
    form.innerHTML =
      '<strong>Try it with your organization:</strong>' +
      '<label>Organization id <input id="sign-in-org" autocomplete="off" spellcheck="false" size="28"></label>' +
      '<label>API key <input id="sign-in-key" type="password" autocomplete="off" size="28"></label>' +
      '<button type="submit">Authorize both headers</button><span id="sign-in-status" role="status"></span>';
    form.onsubmit = (event) => {
      event.preventDefault();
      const org = form.querySelector('#sign-in-org').value.trim();
      const key = form.querySelector('#sign-in-key').value.trim();
      const status = form.querySelector('#sign-in-status');
      if (!org || !key) {
        status.textContent = 'Both are needed: every /api/v1 route sends x-service-organization-id and x-service-api-key.';
        return;
      }
      window.ui.preauthorizeApiKey('organization', org);
      window.ui.preauthorizeApiKey('apiKey', key);
      status.textContent = `Authorized as ${org}: "Try it out" now sends both headers.`;
    };
    document.body.prepend(form);
  }
  window.addEventListener('load', signInBar);
})();
