"""The keys of the screen at the bottom line, drawn as Textual's ``Footer`` draws them, by one
widget.

Textual's footer is a container with a widget for each key (and for each group of keys and
its label): on gputop's main screen 16 widgets, each with its message queue, styles and
caches, styled and laid out at the first frame and composed again whenever the keys change
(a move of the focus, pause, the MIG tree). This widget draws the same cells from the
screen's ``active_bindings`` in one line: the same layout (Textual's margins and paddings of
keys, groups and labels, the command palette's key at the right), the same theme variables,
a key under the mouse highlighted, clicked or given a tooltip as there, and a line too long
for the terminal scrolled with the wheel. ``tests/ui/test_footer.py`` holds it to Textual's
footer cell for cell (on the main screen and on an app with every kind of key; the other
screens' footers are in the snapshot SVGs).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any, ClassVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.color import Color
from textual.css.styles import StylesBase
from textual.reactive import reactive
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget

from gputop.ui.widget_css import css_beside
from gputop.ui.widgets.line_strip import cell_width

_KEY, _DESCRIPTION, _ITEM, _HOVER, _PALETTE_BORDER = (
    "footer--key",
    "footer--description",
    "footer--item",
    "footer--hover",
    "footer--palette-border",
)
_BORDER = "▏"
"""Textual's ``vkey`` border at the left of the command palette's key."""


@dataclass(frozen=True, slots=True)
class FooterItem:
    """One key (or a group's label) as the footer lays it out, ``width`` cells from ``x``."""

    x: int
    width: int
    parts: tuple[tuple[str, str], ...]
    """(text, role): the key, its description and the padding around them; role "" is the
    key's own background, "border" the palette key's rule."""
    key: str | None = None
    """What a click presses; None for a group's label."""
    enabled: bool = True
    tooltip: str = ""


def _layered(styles: Iterable[StylesBase]) -> Style:
    """The Rich style of nodes nested as ``styles`` (outermost first): each background
    blended over the ones beneath, as ``DOMNode.rich_style`` does for a widget and its
    ancestors."""
    background = Color(0, 0, 0, 0)
    color = Color(255, 255, 255, 0)
    style = Style()
    opacity = 1.0
    for layer in styles:
        opacity *= layer.opacity
        if layer.has_rule("background"):
            text_background = background + layer.background.tint(layer.background_tint)
            background += layer.background.tint(layer.background_tint).multiply_alpha(opacity)
        else:
            text_background = background
        if layer.has_rule("color"):
            color = layer.color
        style += layer.text_style
        if layer.has_rule("auto_color") and layer.auto_color:
            color = text_background.get_contrast_text(color.a)
    return style + Style.from_color(
        (background + color).rich_color if (background.a or color.a) else None,
        background.rich_color if background.a else None,
    )


def _row(
    items: Sequence[FooterItem], cell: Callable[[FooterItem | None, str], Style]
) -> list[Segment]:
    """Segments of ``items`` laid out from x = 0, blank (``cell(None, "")``) between them."""
    segments: list[Segment] = []
    x = 0
    for item in items:
        if item.x > x:
            segments.append(Segment(" " * (item.x - x), cell(None, "")))
        segments += [Segment(text, cell(item, role)) for text, role in item.parts if text]
        x = item.x + item.width
    return segments


class Footer(Widget, can_focus=False):
    """The screen's keys, as Textual's footer shows them (non-compact)."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        _KEY,
        _DESCRIPTION,
        _ITEM,
        _HOVER,
        _PALETTE_BORDER,
    }
    DEFAULT_CSS = css_beside(__file__)

    _scroll_x: reactive[float] = reactive(0.0)
    """How far the keys are scrolled to the left, in cells (a float while the wheel's
    scroll is animated)."""

    def __init__(self, *, id: str | None = None, show_command_palette: bool = True) -> None:
        super().__init__(id=id)
        self.show_command_palette = show_command_palette
        self._drawn: tuple[object, ...] | None = None
        self._items: tuple[tuple[FooterItem, ...], tuple[FooterItem, ...]] = ((), ())
        self._scroll_target = 0
        self._mouse_x: int | None = None
        self._hover_shown: FooterItem | None = None
        """The key whose tooltip and pointer are set: the one under the mouse, once told."""
        self._styles: dict[tuple[str, bool, bool, bool], Style] = {}

    # -- what it shows ------------------------------------------------------------------

    def _showing(self, screen: Screen[Any]) -> tuple[object, ...]:
        bindings = screen.active_bindings.values()
        return (self.show_command_palette, *((b, on, tip) for _, b, on, tip in bindings))

    def _bindings_changed(self, screen: Screen[Any]) -> None:
        # Textual's footer keeps its keys while the terminal has lost the focus (which takes
        # the focused widget's keys away until it comes back): so does this one.
        if not self.app.app_focus:
            return
        if screen is self.screen and self._showing(screen) != self._drawn:
            self._drawn = None
            self.refresh()

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles.clear()

    def _key(
        self, binding: Binding, enabled: bool, tip: str, x: int, compact: bool, words: bool = True
    ) -> FooterItem:
        """A key at ``x``: Textual's ``FooterKey``, compact or not, with its words or not."""
        display = self.app.get_key_display(binding)
        described = binding.description if words else ""
        if not described:
            parts: tuple[tuple[str, str], ...] = ((display, _KEY),)
        elif compact:  # Textual's compact key: no padding around the key, one before the words
            parts = ((display, _KEY), (" " + described, _DESCRIPTION))
        else:
            parts = ((f" {display} ", _KEY), (described + " ", _DESCRIPTION))
        width = sum(cell_width(text) for text, _ in parts)
        return FooterItem(x, width, parts, binding.key, enabled, tip)

    def _lay_out(self) -> tuple[tuple[FooterItem, ...], tuple[FooterItem, ...]]:
        """The keys from the left, and the command palette's key (docked at the right), with
        Textual's footer's margins (between two, the larger of the two margins)."""
        active = self.screen.active_bindings
        by_action: dict[str, list[tuple[Binding, bool, str]]] = {}
        for _, binding, enabled, tip in active.values():
            if binding.show:
                by_action.setdefault(binding.action, []).append((binding, enabled, tip))
        items: list[FooterItem] = []
        x = margin = 0  # margin: the right margin of what was laid last

        def place(left: int, right: int) -> int:
            nonlocal x, margin
            x += max(margin, left)
            margin = right
            return x

        firsts = [bindings[0] for bindings in by_action.values()]
        for group, members in groupby(firsts, lambda first: first[0].group):
            grouped = list(members)
            if group is None or len(grouped) == 1:
                for binding, enabled, tip in grouped:
                    key = self._key(binding, enabled, tip, place(0, 0), False)
                    items.append(key)
                    x += key.width
                continue
            # A group: its keys without their words, then its label. A compact group pads
            # its keys by one on the left; otherwise each key has a margin of one each side
            # (collapsed between two).
            start = place(0, 1 if group.compact else 0) + 1
            for binding, enabled, tip in grouped:
                key = self._key(binding, enabled, tip or binding.description, start, True, False)
                items.append(key)
                start += key.width + (0 if group.compact else 1)
            x = start
            label = group.description
            items.append(FooterItem(place(0, 1), cell_width(label), ((label, _DESCRIPTION),)))
            x += cell_width(label)
        palette: tuple[FooterItem, ...] = ()
        command = active.get(self.app.COMMAND_PALETTE_BINDING)
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE and command:
            _, binding, enabled, _ = command
            tip = binding.tooltip or binding.description
            key = self._key(binding, enabled, tip, 0, True)
            parts = ((_BORDER, "border"), *key.parts, (" ", ""))
            palette = (FooterItem(0, key.width + 2, parts, key.key, enabled, key.tooltip),)
        return tuple(items), palette

    def _laid_out(self) -> tuple[tuple[FooterItem, ...], tuple[FooterItem, ...]]:
        if self._drawn is None:
            self._drawn = self._showing(self.screen)
            self._items = self._lay_out()
            self._clamp_scroll()
        return self._items

    def _hovered(self) -> FooterItem | None:
        """The key under the mouse (not a group's label), in the keys as laid out now."""
        item = None if self._mouse_x is None else self._under(self._mouse_x)
        return item if item is not None and item.key is not None else None

    # -- drawing --------------------------------------------------------------------------

    def _style(self, item: FooterItem | None, role: str, hovered: bool) -> Style:
        enabled = item is None or item.enabled
        cache_key = (role, hovered, enabled, item is None)
        cached = self._styles.get(cache_key)
        if cached is None:
            layers = [node.styles for node in reversed(self.ancestors_with_self)]
            if item is not None:
                layers.append(self.get_component_styles(_HOVER if hovered else _ITEM))
            if role in (_KEY, _DESCRIPTION):
                layers.append(self.get_component_styles(role))
            cached = _layered(layers)
            if not role:  # blank: a margin, a padding, the line past the keys
                cached = Style(bgcolor=cached.bgcolor)
            elif role == "border":
                # Blended over what is behind the key (Textual's borders are), hovered or not.
                border = self.get_component_styles(_PALETTE_BORDER).color
                behind = Color.from_rich_color(self._style(None, "", False).bgcolor)
                cached += Style(color=(behind + border).rich_color)
            if not enabled:
                cached += Style(dim=True)
            self._styles[cache_key] = cached
        return cached

    def _room(self) -> int:
        """Cells left of the palette's key."""
        return self.size.width - sum(item.width for item in self._items[1])

    def _overflow(self) -> int:
        keys = self._items[0]
        return max(0, (keys[-1].x + keys[-1].width if keys else 0) - self._room())

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        keys, palette = self._laid_out()
        hovered = self._hovered()
        if hovered is not self._hover_shown:
            # The keys moved under a still mouse (laid out again, scrolled, resized).
            self.call_after_refresh(self._show_hover)

        def cell(item: FooterItem | None, role: str) -> Style:
            return self._style(item, role, item is not None and item is hovered)

        fill = cell(None, "")
        room = self._room()
        scrolled = round(self._scroll_x)
        line = Strip(_row(keys, cell)).crop_extend(scrolled, scrolled + max(room, 0), fill)
        if palette:
            docked = Strip(_row(palette, cell))
            # Docked at the right edge: a terminal narrower than the key shows its right end.
            docked = docked.crop(max(0, -room), palette[0].width)
            line = Strip.join([line, docked]) if room > 0 else docked
        return line.crop_extend(0, width, fill).simplify()

    # -- the mouse ----------------------------------------------------------------------

    def _under(self, x: int) -> FooterItem | None:
        keys, palette = self._laid_out()
        room = self._room()
        if palette and x >= room:
            return palette[0]
        x += round(self._scroll_x)
        for item in keys:
            if item.x <= x < item.x + item.width:
                return item
        return None

    def _show_hover(self) -> None:
        """The tooltip and the mouse's shape of the key under the mouse, as Textual's keys
        have them (the shape where the terminal can)."""
        item = self._hovered()
        if item is self._hover_shown:
            return
        self._hover_shown = item
        self.tooltip = item.tooltip if item is not None and item.tooltip else None
        self.styles.pointer = "default" if item is None else "pointer"

    def _mouse_at(self, x: int | None) -> None:
        self._mouse_x = x
        if self._hovered() is not self._hover_shown:
            self.refresh()
            self._show_hover()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        self._mouse_at(event.x)

    def on_leave(self) -> None:
        self._mouse_at(None)

    def on_mouse_down(self, event: events.MouseDown) -> None:
        item = self._under(event.x)
        if item is None or item.key is None:
            return
        if item.enabled:
            self.app.simulate_key(item.key)
        else:
            self.app.bell()

    # -- scrolling a line too long, as Textual's footer (a scrolling container) does ------

    def _clamp_scroll(self) -> None:
        target = min(self._scroll_target, self._overflow())
        if target != self._scroll_target:
            self._scroll_target = target
            self._scroll_x = float(target)

    def on_resize(self) -> None:
        self._laid_out()
        self._clamp_scroll()

    def _scroll_by(self, cells: float, event: events.MouseEvent) -> None:
        self._laid_out()
        target = max(0, min(self._overflow(), round(self._scroll_target + cells)))
        if target != self._scroll_target:
            self._scroll_target = target
            # Textual's wheel scroll: 50 cells a second, "out_cubic".
            self.animate("_scroll_x", float(target), speed=50, easing="out_cubic", level="basic")
            event.stop()
            event.prevent_default()

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        self._scroll_by(self.app.scroll_sensitivity_x, event)

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        self._scroll_by(-self.app.scroll_sensitivity_x, event)

    def on_mouse_scroll_right(self, event: events.MouseScrollRight) -> None:
        self._scroll_by(self.app.scroll_sensitivity_x, event)

    def on_mouse_scroll_left(self, event: events.MouseScrollLeft) -> None:
        self._scroll_by(-self.app.scroll_sensitivity_x, event)
