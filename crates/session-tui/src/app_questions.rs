//! The app's side of the question dialogs: opened and closed by the `question.*` bus events,
//! and answered by keys. Kept apart from the dialog itself, which knows nothing of the app.

use crossterm::event::KeyEvent;
use session_runtime::BusEvent;

use crate::app::{App, Effect};
use crate::question::{Outcome, QuestionDialog};

impl App {
    /// Opens or closes question dialogs on `question.*` events; true when the screen changed.
    /// Every session's questions show: this UI is the only one that can answer them.
    pub(crate) fn question_event(&mut self, event: &BusEvent) -> bool {
        match event {
            BusEvent::QuestionAsked(request) => {
                self.questions.push_back(QuestionDialog::new(request.as_ref().clone()));
                true
            }
            BusEvent::QuestionReplied { request_id, .. } | BusEvent::QuestionRejected { request_id, .. } => {
                let before = self.questions.len();
                self.questions.retain(|dialog| &dialog.request.id != request_id);
                before != self.questions.len()
            }
            _ => false,
        }
    }

    /// A key for the shown question dialog.
    pub(crate) fn question_key(&mut self, key: &KeyEvent) -> Vec<Effect> {
        let Some(dialog) = self.questions.front_mut() else { return Vec::new() };
        let id = dialog.request.id.clone();
        match dialog.key(key) {
            Outcome::Pending => Vec::new(),
            Outcome::Answered(answers) => {
                self.questions.pop_front();
                vec![Effect::ReplyQuestion { id, answers }]
            }
            Outcome::Dismissed => {
                self.questions.pop_front();
                vec![Effect::RejectQuestion(id)]
            }
        }
    }
}
