import { gasTankHealth } from '../../src/modules/sweeps/gas-tank.service.js';

it('a tank is unfunded when it holds nothing (or was never read), low when flagged low, ok otherwise', () => {
  expect(gasTankHealth({ balance: null, low: false })).toBe('unfunded');
  expect(gasTankHealth({ balance: 0n, low: true })).toBe('unfunded');
  expect(gasTankHealth({ balance: 1n, low: true })).toBe('low');
  expect(gasTankHealth({ balance: 10n ** 18n, low: true })).toBe('low'); // above the threshold but short of what waiting sweeps need
  expect(gasTankHealth({ balance: 10n ** 18n, low: false })).toBe('ok');
});
