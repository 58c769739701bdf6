/**
 * TextAccumulator: whatever mix of announced and ordinary deltas arrives, its
 * text is the deltas joined; an announced whole text is kept by reference.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { piecesAt } from '../helpers/cuts.ts';
import { TextAccumulator } from '../../src/shard/turn/text-accumulator.ts';

/** Splits `text` at the given cut points (indices into it, any order). */
const split = (text: string, cuts: number[]): string[] => piecesAt(text.length, cuts, (from, to) => text.slice(from, to));

describe('TextAccumulator', () => {
  it('an announced text that the deltas complete comes back as that very string', () => {
    const whole = 'w '.repeat(1000);
    const acc = new TextAccumulator();
    split(whole, [2, 50, 999]).forEach((d, i) => acc.append(d, i === 0 ? whole : undefined));
    expect(acc.text()).toBe(whole);
    expect(Object.is(acc.text(), whole)).toBe(true);
  });

  it('a step cut short keeps the part of the announced text its deltas reached', () => {
    const acc = new TextAccumulator();
    acc.append('hello ', 'hello big world');
    acc.append('big ');
    expect(acc.text()).toBe('hello big ');
  });

  it('a delta that departs from the announced text is kept as sent, after what was reached', () => {
    const acc = new TextAccumulator();
    acc.append('hello ', 'hello world');
    acc.append('there');
    acc.append('world');
    expect(acc.text()).toBe('hello thereworld');
  });

  it('an announcement after the first delta is ignored', () => {
    const acc = new TextAccumulator();
    acc.append('a ');
    acc.append('b ', 'b c');
    acc.append('c');
    expect(acc.text()).toBe('a b c');
  });

  it('any deltas, announced truly or falsely, add up to their concatenation', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.array(fc.nat()), fc.option(fc.string({ unit: 'grapheme' })), fc.array(fc.string()), (text, cuts, announced, extra) => {
        const deltas = [...split(text, cuts), ...extra];
        const acc = new TextAccumulator();
        deltas.forEach((d, i) => acc.append(d, i === 0 && announced !== null ? announced : undefined));
        expect(acc.text()).toBe(deltas.join(''));
        expect(acc.empty).toBe(deltas.join('') === '');
        acc.clear();
        expect(acc.text()).toBe('');
      }),
    );
  });
});
