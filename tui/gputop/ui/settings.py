"""How the TUI presents itself: the parts of the options it needs, plus test switches."""

from __future__ import annotations

from dataclasses import dataclass

THEMES = {"dark": "textual-dark", "light": "textual-light"}
"""``--theme`` words to Textual theme names."""


@dataclass(frozen=True, slots=True)
class UiSettings:
    """Presentation settings of one app run."""

    theme: str = "dark"
    """``dark`` or ``light`` (or any registered Textual theme name)."""
    readonly: bool = False
    """Never offer to signal processes (always true for replays)."""
    source_label: str = "live"
    """What the header calls the source: ``live``, or the replayed file's name."""
    show_host: bool = True
    """Show the host name; snapshot tests turn it off."""
    show_clock: bool = True
    """Show wall-clock time; snapshot tests turn it off."""
    animate: bool = True
    """Textual animations; tests turn them off."""
    served: bool = False
    """A `gputop serve` browser viewer: no signal keys at all (not even to say they are
    off), and the sampling interval is the server's, not the viewer's to change."""

    @property
    def textual_theme(self) -> str:
        """The Textual theme to use."""
        return THEMES.get(self.theme, self.theme)
