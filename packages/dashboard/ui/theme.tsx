/**
 * The light/dark theme: the system's scheme unless the toggle chose one (kept in `localStorage`).
 */
import { useEffect, useState } from "preact/hooks"
import { tryStorage } from "./session.js"

type Theme = "light" | "dark" | "system"

const themeKey = "mediagate.theme"

/** Applies a theme to the page. */
export const applyTheme = (theme: Theme) => {
  if (theme === "system") delete document.documentElement.dataset["theme"]
  else document.documentElement.dataset["theme"] = theme
}

/** The theme chosen last (the system's by default). */
export const storedTheme = (): Theme => {
  const value = tryStorage(() => localStorage.getItem(themeKey))
  return value === "light" || value === "dark" ? value : "system"
}

/** The toggle: system, dark, light, system. */
export const ThemeToggle = () => {
  const [theme, setTheme] = useState<Theme>(storedTheme)
  useEffect(() => {
    applyTheme(theme)
    // without storage: this page only
    tryStorage(() => theme === "system" ? localStorage.removeItem(themeKey) : localStorage.setItem(themeKey, theme))
  }, [theme])
  const next: Record<Theme, Theme> = { system: "dark", dark: "light", light: "system" }
  return (
    <button type="button" class="theme" onClick={() => setTheme(next[theme])} aria-label={`Theme: ${theme}. Switch to ${next[theme]}`}>
      {theme === "system" ? "◐ Auto" : theme === "dark" ? "☾ Dark" : "☀ Light"}
    </button>
  )
}
