// SPDX-License-Identifier: Apache-2.0
// What every view gets from the app shell, and what it gives back.
import type { ProfileRef, ViewState } from './state';

export interface ViewContext {
  state: ViewState;
  start: number; // the view's window, Unix seconds
  end: number;
  // Changes the URL (a new history entry unless `replace`) and re-renders.
  navigate(patch: Partial<ViewState>, replace?: boolean): void;
  // A link to another view, with the current time range kept.
  href(patch: Partial<ViewState>): string;
  openProfile(ref: ProfileRef): void;
}

export interface View {
  // Re-fetches for a moved window (live mode) and updates in place.
  refresh(ctx: ViewContext): Promise<void>;
  destroy(): void;
}
